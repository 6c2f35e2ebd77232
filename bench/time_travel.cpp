// bench/time_travel: what time travel costs, in one run on one backend (`cpu` or `cuda`, the CUDA
// backend through its plugin as the programs load it), at the default size:
// - the default step (graphed on CUDA) with checkpoints (history.checkpoint_every, default 100)
//   against without (0), on alternating blocks of 100 steps, median per step and the ratio;
// - the time to recompute a random step of a 400-step fold (the default fold) from the latest
//   checkpoint at or before it: one slot (what the workbench's inspector asks) and every slot (what
//   `nanscope-run materialize` writes), median and largest over the samples.
// Usage: bench_time_travel cpu|cuda [BLOCKS] [SAMPLES]
#include <fmt/format.h>

#include <cstdio>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend_choice.h"
#include "core/config.h"
#include "session/materialize.h"
#include "session/session.h"

#include "bench_util.h"
#include "session_timing.h"

using namespace nanscope;
using nanscope::bench::median;
using nanscope::bench::ms_per_step;

namespace {

Config step_config(int checkpoint_every, int steps_per_fold) {
  Config c;
  c.run.folds = 1;
  c.run.steps_per_fold = steps_per_fold;
  c.halt.on_fire = HaltOnFire::Never;
  c.history.checkpoint_every = checkpoint_every;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "cpu";
  const bool cuda = which == "cuda";
  if (which != "cpu" && !cuda) {
    std::fprintf(stderr, "bench_time_travel: %s: expected cpu or cuda\n", which.c_str());
    return 2;
  }
  const int blocks = argc > 2 ? std::atoi(argv[2]) : (cuda ? 21 : 3);
  const int samples = argc > 3 ? std::atoi(argv[3]) : (cuda ? 21 : 5);
  const int block_steps = 100;  // one checkpoint in each block
  auto make = [&](const Config& c) {
    return choose_backend(cuda ? BackendChoice::Cuda : BackendChoice::Cpu, c, false);
  };
  SessionOptions graphed;
  graphed.graph = cuda;

  // The step with checkpoints and without, alternating blocks of 100 steps (each meets one
  // checkpoint), in one fold long enough for all of them.
  const int long_fold = (blocks + 1) * block_steps + 1;
  const Config with = step_config(100, long_fold), without = step_config(0, long_fold);
  Session on(with, make(with), graphed), off(without, make(without), graphed);
  ms_per_step(on, 1, block_steps);  // warm: the fold's upload, the capture
  ms_per_step(off, 1, block_steps);
  std::vector<double> t_on, t_off;
  for (int b = 0; b < blocks; ++b) {
    t_on.push_back(ms_per_step(on, 1, block_steps));
    t_off.push_back(ms_per_step(off, 1, block_steps));
  }
  const double m_on = median(t_on), m_off = median(t_off);
  fmt::print(
      "bench time_travel [{}, {}]: the default step ({}), median of {} alternating blocks "
      "of {} steps\n",
      which, on.backend().device_name(), cuda ? "graphed" : "phase by phase", blocks, block_steps);
  fmt::print(
      "  step with checkpoints every 100 steps: {:.4f} ms; without: {:.4f} ms; "
      "checkpoint_overhead {:+.2f}%\n",
      m_on, m_off, (m_on / m_off - 1) * 100);
  fmt::print("  one checkpoint: {:.2f} MiB ({} kept by the run above)\n",
             static_cast<double>(on.backend().checkpoint_bytes()) / (1 << 20),
             on.checkpoints().size());
  if (!cuda) {  // the host ring's copy alone (on the device it is queued, not waited for)
    std::vector<double> copy;
    for (int i = 0; i < 9; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      on.backend().keep_checkpoint(0);
      copy.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    fmt::print("  one checkpoint's copy: {:.2f} ms (median of 9), {:.3f}% of 100 steps\n",
               median(copy), median(copy) / (100 * m_off) * 100);
  }

  // Recomputing a random step of the default 400-step fold.
  const Config fold = step_config(100, 400);
  Session run(fold, make(fold), graphed);
  run.run();
  Materializer m(fold, make, cuda);
  std::mt19937 rng(5);
  for (const bool every_slot : {false, true}) {
    std::vector<double> ms;
    std::vector<int> steps_run;
    for (int i = -1; i < samples; ++i) {  // i = -1: the recomputing session's warm-up
      const int step = static_cast<int>(rng() % 400);
      const Checkpoint from = run.read_checkpoint(*run.checkpoint_at_or_before(0, step));
      const MaterializeRequest r{0, step, every_slot ? std::vector<int>{} : std::vector<int>{2}};
      const auto got = m.materialize(from, r);
      if (i < 0) continue;
      ms.push_back(got->ms);
      steps_run.push_back(got->steps_run);
    }
    fmt::print(
        "  recompute a random step of a 400-step fold, {}: median {:.1f} ms, largest {:.1f} "
        "ms over {} steps ({} to {} steps recomputed)\n",
        every_slot ? "every slot" : "one slot (h_s2)", median(ms),
        *std::max_element(ms.begin(), ms.end()), samples,
        *std::min_element(steps_run.begin(), steps_run.end()),
        *std::max_element(steps_run.begin(), steps_run.end()));
  }
  return 0;
}
