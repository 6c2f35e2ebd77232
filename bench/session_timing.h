// How the benchmarks time a session's steps.
#pragma once

#include <chrono>
#include <vector>

#include "session/session.h"

#include "bench_util.h"

namespace nanscope::bench {

// Median ms per step over `blocks` blocks of `steps` steps (run mode: each block one run() call,
// its steps' readbacks as the session makes them).
inline double ms_per_step(Session& s, int blocks, int steps) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> t;
  RunUntil n;
  n.kind = RunUntil::Kind::Steps;
  n.steps = steps;
  for (int b = 0; b < blocks; ++b) {
    const auto start = Clock::now();
    s.run(n);
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count() * 1e3 / steps);
  }
  return median(t);
}

}  // namespace nanscope::bench
