// bench/cuda_step: the CUDA backend's ungraphed training step at the default size, driven by the
// session in run mode (checks on the device, one status record read back per step), against
//   - the same step with every check turned off (sentinel.disabled = all slots), same run;
//   - the CPU reference backend's step, same run (the peer it must match);
// with per-phase times from stepping phase by phase (each phase synchronised).
#include <fmt/format.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "core/config.h"
#include "cuda_backend.h"
#include "session/session.h"

#include "bench_util.h"

using namespace nanscope;
using nanscope::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Median ms per step over `blocks` blocks of `steps` steps (each step ends with its readback).
double ms_per_step(Session& s, int blocks, int steps) {
  std::vector<double> t;
  RunUntil n;
  n.kind = RunUntil::Kind::Steps;
  n.steps = steps;
  for (int b = 0; b < blocks; ++b) {
    const auto start = Clock::now();
    s.run(n);
    t.push_back(seconds_since(start) * 1e3 / steps);
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 7;
  Config config;
  config.run.folds = 1;
  config.run.steps_per_fold = 4000;
  config.halt.on_fire = "never";
  Session gpu(config, cuda::make_cuda_backend(config));
  for (int i = 0; i < 20; ++i) gpu.step();  // warm-up: the fold's upload, cuBLAS heuristics
  const auto d2h0 = gpu.backend().device_sentinel()->device_to_host_copies();
  const double on = ms_per_step(gpu, blocks, 100);
  const double copies = static_cast<double>(gpu.backend().device_sentinel()->device_to_host_copies() - d2h0) /
                        (blocks * 100.0);

  Config off_cfg = config;
  for (int s = 0; s < kSlotCount; ++s) off_cfg.sentinel.disabled.push_back(s);
  Session gpu_off(off_cfg, cuda::make_cuda_backend(off_cfg));
  for (int i = 0; i < 20; ++i) gpu_off.step();
  const double off = ms_per_step(gpu_off, blocks, 100);

  // Per phase (ungraphed, each phase followed by a device synchronisation through a status read).
  std::vector<std::vector<double>> phase_ms(kPhaseCount);
  for (int st = 0; st < 50; ++st)
    for (int p = 0; p < kPhaseCount; ++p) {
      const auto t = Clock::now();
      gpu.step_phase();
      phase_ms[static_cast<std::size_t>(p)].push_back(seconds_since(t) * 1e3);
    }

  Config cpu_cfg = config;
  Session cpu(cpu_cfg, make_cpu_backend(cpu_cfg));
  cpu.step();
  const double cpu_ms = ms_per_step(cpu, 3, 3);

  fmt::print("bench cuda_step: default config, {} [{}], ungraphed, run mode\n", gpu.backend().name(),
             gpu.backend().device_name());
  fmt::print("CUDA step, checks on             {:8.3f} ms  ({:.0f} steps/s)\n", on, 1e3 / on);
  fmt::print("CUDA step, every check off       {:8.3f} ms  -> checks cost {:.1f}% of the ungraphed step\n", off,
             100.0 * (on - off) / off);
  fmt::print("device-to-host copies per step   {:8.2f}\n", copies);
  fmt::print("CPU reference step, same run     {:8.1f} ms  -> CUDA ungraphed is {:.1f}x the CPU backend\n", cpu_ms,
             cpu_ms / on);
  fmt::print("per phase (phase-stepped, each followed by a status readback), median ms:\n");
  for (int p = 0; p < kPhaseCount; ++p)
    fmt::print("  {:<22} {:8.3f}\n", phase_name(static_cast<Phase>(p)), median(phase_ms[static_cast<std::size_t>(p)]));
  return 0;
}
