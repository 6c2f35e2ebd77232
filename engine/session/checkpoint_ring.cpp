#include "session/checkpoint_ring.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"

namespace nanscope {

int CheckpointRing::capacity_for(const Config& config, std::size_t bytes_each) {
  const int every = config.history.checkpoint_every;
  if (every <= 0) return 0;
  const std::int64_t per_fold = (config.run.steps_per_fold + every - 1) / every;
  const std::int64_t wanted = per_fold * config.run.folds;
  const std::int64_t budget = static_cast<std::int64_t>(config.history.memory_mb) << 20;
  const std::int64_t fit = budget / static_cast<std::int64_t>(std::max<std::size_t>(bytes_each, 1));
  if (fit < 1)
    throw ConfigError(fmt::format(
        "config: key 'history.memory_mb': {} MiB cannot hold one checkpoint of this model ({:.1f} "
        "MiB); raise it, or set history.checkpoint_every = 0 to keep none",
        config.history.memory_mb, static_cast<double>(bytes_each) / (1 << 20)));
  return static_cast<int>(std::min(wanted, fit));
}

CheckpointRing::CheckpointRing(const Config& config, int capacity)
    : every_(config.history.checkpoint_every), capacity_(capacity) {}

bool CheckpointRing::due(int step) const {
  return capacity_ > 0 && every_ > 0 && step % every_ == 0;
}

int CheckpointRing::take(int fold, int step, std::int64_t global_step) {
  // The same step again (a run resumed at a checkpoint) keeps its entry.
  for (CheckpointMark& m : marks_)
    if (m.fold == fold && m.step == step) return m.ring_index;
  int index = static_cast<int>(marks_.size());
  if (index >= capacity_) {
    index = marks_.front().ring_index;
    marks_.erase(marks_.begin());
  }
  marks_.push_back(CheckpointMark{fold, step, global_step, index});
  return index;
}

std::optional<CheckpointMark> CheckpointRing::at_or_before(int fold, int step) const {
  std::optional<CheckpointMark> best;
  for (const CheckpointMark& m : marks_)
    if (m.fold == fold && m.step <= step && (!best || m.step > best->step)) best = m;
  return best;
}

}  // namespace nanscope
