#include "models/snapshot.h"

#include <algorithm>
#include <cmath>

namespace nanscope::gui {

std::pair<std::size_t, std::size_t> Snapshot::fold_steps(int fold) const {
  if (fold < 0 || static_cast<std::size_t>(fold) >= fold_begin.size())
    return {steps.size(), steps.size()};
  const std::size_t begin = fold_begin[static_cast<std::size_t>(fold)];
  const std::size_t end = static_cast<std::size_t>(fold) + 1 < fold_begin.size()
                              ? fold_begin[static_cast<std::size_t>(fold) + 1]
                              : steps.size();
  return {begin, end};
}

std::optional<SnapshotEntry> Snapshot::fold_entry(int fold) const {
  if (fold < 0 || static_cast<std::size_t>(fold) >= folds.size()) return std::nullopt;
  const FoldFlags& f = folds[static_cast<std::size_t>(fold)];
  if (!f.entry_slot || !f.entry_step) return std::nullopt;
  return SnapshotEntry{*f.entry_slot, fold, *f.entry_step};
}

bool apply_update(Snapshot& view, const SnapshotUpdate& u) {
  if (u.reset) {
    view = Snapshot{};
  } else if (u.first_step != view.steps.size() || u.first_event != view.events.size() ||
             u.first_fold > view.folds.size()) {
    return false;  // not the continuation of what the window holds
  }
  static_cast<SnapshotHead&>(view) = u.head;
  show_table(view.table);
  for (const StepRow& r : u.steps) {
    // Steps of a fold are contiguous: a new fold starts where its first step lands.
    while (static_cast<int>(view.fold_begin.size()) <= r.fold)
      view.fold_begin.push_back(view.steps.size());
    view.steps.push_back(r);
  }
  for (std::size_t i = 0; i < u.steps.size(); ++i)
    view.health.push_back(i < u.health.size() ? u.health[i] : SlotHealthRows{});
  view.folds.resize(u.first_fold);
  view.folds.insert(view.folds.end(), u.folds.begin(), u.folds.end());
  view.events.insert(view.events.end(), u.events.begin(), u.events.end());
  return true;
}

BufferStats cell_without_buffer(int slot, int fold, int step, BufferStats::Source source,
                                int generation, const QString& origin) {
  BufferStats s;
  s.slot = slot;
  s.fold = fold;
  s.step = step;
  s.exists = true;
  s.computed = false;
  s.source = source;
  s.generation = generation;
  s.origin = origin;
  return s;
}

BufferStats compute_stats(int slot, const std::vector<std::int64_t>& shape, const float* data,
                          std::size_t count, const QString& origin) {
  BufferStats s;
  s.slot = slot;
  s.origin = origin;
  s.shape = shape;
  s.exists = data != nullptr;
  if (!data) return s;
  s.count = static_cast<std::int64_t>(count);
  s.values.assign(data, data + count);
  const Census c = census(data, count, 32);
  s.nan = c.nan;
  s.posinf = c.posinf;
  s.neginf = c.neginf;
  s.first_bad = c.first_bad;
  if (c.finite == 0) return s;
  const double lo = c.finite_min, hi = c.finite_max;
  s.finite_min = lo;
  s.finite_max = hi;
  s.finite_mean = c.finite_sum / static_cast<double>(c.finite);
  const int bins = 40;
  const double width = hi > lo ? (hi - lo) / bins : 1.0;
  s.histogram.assign(bins, 0);
  // A buffer of one finite value has one bar, centred on it.
  const double start = hi > lo ? lo : lo - 0.5 * bins * width;
  for (int b = 0; b <= bins; ++b) s.histogram_edges.push_back(start + b * width);
  for (std::size_t i = 0; i < count; ++i)
    if (std::isfinite(data[i]))
      ++s.histogram[std::clamp(static_cast<int>((data[i] - start) / width), 0, bins - 1)];
  return s;
}

}  // namespace nanscope::gui
