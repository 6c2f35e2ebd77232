// Time travel's bookkeeping: where each kept state of the run is in the backend's ring
// (Backend::keep_checkpoint), taken every history.checkpoint_every steps of a fold, the oldest
// dropped first once history.memory_mb is full (docs/files.md, "Checkpoints").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"

namespace nanscope {

struct CheckpointMark {
  int fold = 0, step = 0;
  std::int64_t global_step = 0;
  int ring_index = -1;  // the backend's ring entry
};

class CheckpointRing {
 public:
  // How many checkpoints the run keeps: as many as it takes (one every `checkpoint_every` steps
  // of every fold), within `memory_mb` at `bytes_each`. 0 when checkpoints are off. Throws
  // ConfigError when the budget cannot hold a single one.
  static int capacity_for(const Config& config, std::size_t bytes_each);

  explicit CheckpointRing(const Config& config, int capacity);
  int capacity() const { return capacity_; }
  bool due(int step) const;
  // A ring entry for the state before (fold, step): a free one, or the oldest one's.
  int take(int fold, int step, std::int64_t global_step);
  // Kept checkpoints, oldest first.
  const std::vector<CheckpointMark>& marks() const { return marks_; }
  // The latest checkpoint at or before (fold, step) within that fold, if one is kept.
  std::optional<CheckpointMark> at_or_before(int fold, int step) const;
  void clear() { marks_.clear(); }

 private:
  int every_ = 0, capacity_ = 0;
  std::vector<CheckpointMark> marks_;
};

}  // namespace nanscope
