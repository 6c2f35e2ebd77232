// Small helpers shared by the benchmarks.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace nanscope::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "64,256,1024" -> {64, 256, 1024}; what is not a number ends the list ("" -> {}).
inline std::vector<int> int_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text;;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p) break;
    out.push_back(static_cast<int>(v));
    if (*end != ',') break;
    p = end + 1;
  }
  return out;
}

}  // namespace nanscope::bench
