#include "models/snapshot.h"

#include <algorithm>
#include <cmath>

namespace nanscope::gui {

const std::array<int, kSlotCount>& dataflow_order() {
  static const std::array<int, kSlotCount> order = [] {
    std::array<int, kSlotCount> o{};
    for (int i = 0; i < kSlotCount; ++i) o[i] = i;
    std::sort(o.begin(), o.end(), [](int a, int b) { return slot_info(a).rank < slot_info(b).rank; });
    return o;
  }();
  return order;
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
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  std::int64_t finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const float v = data[i];
    if (std::isfinite(v)) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
      sum += v;
      ++finite;
    } else {
      if (std::isnan(v)) ++s.nan;
      else if (v > 0) ++s.posinf;
      else ++s.neginf;
      if (s.first_bad.size() < 32) s.first_bad.push_back(static_cast<std::int64_t>(i));
    }
  }
  if (finite == 0) return s;
  s.finite_min = lo;
  s.finite_max = hi;
  s.finite_mean = sum / static_cast<double>(finite);
  const int bins = 40;
  const double width = hi > lo ? (hi - lo) / bins : 1.0;
  s.histogram.assign(bins, 0);
  for (int b = 0; b <= bins; ++b) s.histogram_edges.push_back(lo + b * width);
  for (std::size_t i = 0; i < count; ++i)
    if (std::isfinite(data[i]))
      ++s.histogram[std::min(bins - 1, static_cast<int>((data[i] - lo) / width))];
  return s;
}

}  // namespace nanscope::gui
