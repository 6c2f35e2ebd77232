// Small helpers shared by the benchmarks.
#pragma once

#include <algorithm>
#include <vector>

namespace nanscope::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace nanscope::bench
