// bench/cpu_step: the CPU reference backend's training step at the default size, per phase, with
// the step's GEMM work compared against Eigen's own GEMM rate measured in the same run (the
// ceiling a step made only of GEMMs could reach on this machine).
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "core/config.h"
#include "model/backend.h"
#include "session/session.h"

#include "bench_util.h"

using namespace nanscope;
using nanscope::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

// Multiply-adds of the step's matrix products (forward + backward), from the dimensions.
double step_gemm_flops(const Dims& d) {
  auto mm = [](double m, double k, double n) { return 2.0 * m * k * n; };
  const double B = d.B, F = d.F, H = d.H, Z = d.Z, NA = d.NA, A = d.A;
  double trunk = mm(B, F, H) + mm(B, H, H);
  double heads = mm(B, H, Z) + mm(B, Z, NA) + mm(B, Z, A * NA) + d.E * mm(B, Z, NA);
  double fwd = 3 * trunk + 3 * (mm(B, H, Z) + mm(B, Z, NA) + mm(B, Z, A * NA)) + d.E * mm(B, Z, NA);
  fwd += mm(B, H, d.AH) + mm(B, d.AH, 2);
  double bwd = 2 * (trunk + heads) + 2 * (mm(B, H, d.AH) + mm(B, d.AH, 2));
  if (d.iqn) {
    double iqn = [&](double n) { return mm(B * n, d.C, H) + mm(B * n, H, A); }(d.N);
    fwd +=
        iqn + mm(B * d.K, d.C, H) + mm(B * d.K, H, A) + mm(B * d.Np, d.C, H) + mm(B * d.Np, H, A);
    bwd += 2 * iqn;
  }
  return fwd + bwd;
}

double eigen_gemm_gflops() {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  M a = M::Random(512, 512), b = M::Random(512, 512), c(512, 512);
  std::vector<double> t;
  for (int i = 0; i < 15; ++i) {
    auto s = Clock::now();
    c.noalias() = a * b;
    t.push_back(std::chrono::duration<double>(Clock::now() - s).count());
  }
  volatile float sink = c(0, 0);
  (void)sink;
  return 2.0 * 512 * 512 * 512 / median(t) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  Config config;  // the default config
  config.run.steps_per_fold = reps + 3;
  config.run.folds = 1;
  Session session(config, make_cpu_backend(config));
  for (int i = 0; i < 3; ++i) session.step();  // warm-up

  std::vector<std::vector<double>> phase_times(kPhaseCount);
  std::vector<double> step_times;
  for (int r = 0; r < reps; ++r) {
    double step = 0;
    for (int p = 0; p < kPhaseCount; ++p) {
      auto s = Clock::now();
      session.step_phase();
      double dt = std::chrono::duration<double>(Clock::now() - s).count();
      phase_times[p].push_back(dt);
      step += dt;
    }
    step_times.push_back(step);
  }
  // The same steps with a run directory: the only per-step extra is the pre-update state snapshot
  // that lets a dump hold "the parameters before the step" (a step with no fire writes nothing).
  std::vector<double> recorded;
  {
    SessionOptions o;
    o.out_dir = (std::filesystem::temp_directory_path() / "nanscope_bench_cpu_step").string();
    std::filesystem::remove_all(o.out_dir);
    Session rec(config, make_cpu_backend(config), o);
    for (int i = 0; i < 3; ++i) rec.step();
    for (int r = 0; r < reps; ++r) {
      auto s = Clock::now();
      rec.step();
      recorded.push_back(std::chrono::duration<double>(Clock::now() - s).count());
    }
    std::filesystem::remove_all(o.out_dir);
  }
  // The slots' health on (the default) against off (sentinel.health = false): two sessions, their
  // steps alternating, so that a drift of the machine's speed falls on both alike.
  std::vector<double> with_health, no_health;
  {
    Config off = config;
    off.sentinel.health = false;
    Session on_s(config, make_cpu_backend(config));
    Session off_s(off, make_cpu_backend(off));
    for (int i = 0; i < 3; ++i) {
      on_s.step();
      off_s.step();
    }
    for (int r = 0; r < reps; ++r) {
      auto t = Clock::now();
      on_s.step();
      with_health.push_back(std::chrono::duration<double>(Clock::now() - t).count());
      t = Clock::now();
      off_s.step();
      no_health.push_back(std::chrono::duration<double>(Clock::now() - t).count());
    }
  }
  const double gflops = eigen_gemm_gflops();
  const double step_s = median(step_times);
  const double work = step_gemm_flops(session.backend().dims());

  fmt::print("bench cpu_step: default config (B={}, H={}, atoms={}, IQN N={}), float32, {} reps\n",
             config.model.batch, config.model.hidden, config.model.atoms, config.model.iqn_n, reps);
  fmt::print("{:<22} {:>10}\n", "phase", "median ms");
  for (int p = 0; p < kPhaseCount; ++p)
    fmt::print("{:<22} {:>10.3f}\n", phase_name(static_cast<Phase>(p)),
               1e3 * median(phase_times[p]));
  fmt::print("{:<22} {:>10.3f}\n", "step", 1e3 * step_s);
  fmt::print("{:<22} {:>10.3f}  ({:+.1f}% vs without)\n", "step, recording on",
             1e3 * median(recorded), 100.0 * (median(recorded) / step_s - 1.0));
  fmt::print("{:<22} {:>10.3f}  vs health off {:.3f} (alternating steps): health costs {:+.1f}%\n",
             "step, health on", 1e3 * median(with_health), 1e3 * median(no_health),
             100.0 * (median(with_health) / median(no_health) - 1.0));
  fmt::print("step GEMM work          {:.3f} GFLOP\n", work / 1e9);
  fmt::print("Eigen sgemm 512^3       {:.2f} GFLOP/s (ceiling, same run)\n", gflops);
  fmt::print("step GEMM rate          {:.2f} GFLOP/s = {:.2f} of the ceiling\n",
             work / step_s / 1e9, work / step_s / 1e9 / gflops);
  return 0;
}
