// The CUDA backend against the CPU reference (float32), default size: every slot buffer over
// several steps, the loss scalars, and the device-to-host traffic of a step in run mode.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "core/errors.h"
#include "cuda_backend.h"
#include "data/bars.h"
#include "model/check_bank.h"
#include "session/session.h"

using namespace nanscope;

namespace {

// Norm-wise relative error ||a - b|| / ||b|| (b the CPU reference); 0 when both are zero.
double rel_error(const SlotView& a, const SlotView& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < b.count; ++i) {
    d += (a.at(i) - b.at(i)) * (a.at(i) - b.at(i));
    n += b.at(i) * b.at(i);
  }
  return n == 0 ? std::sqrt(d) : std::sqrt(d / n);
}

}  // namespace

TEST(CudaBackend, EverySlotMatchesTheCpuBackendOverSeveralSteps) {
  Config c;
  c.optim.target_sync = 2;  // a target network that differs from the online one within the test
  auto cpu = make_cpu_backend(c);
  auto gpu = cuda::make_cuda_backend(c);
  const auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
  const auto folds = plan_folds(c.data.bars, c.run.folds, c.data.n_step);
  const auto fold0 = build_transitions(bars, folds[0], c);
  cpu->load_fold(fold0);
  gpu->load_fold(fold0);
  std::map<int, double> worst;
  constexpr int kSteps = 6;
  for (int st = 0; st < kSteps; ++st) {
    const StepKey key{c.run.seed, 0, st, st};
    gpu->checks().begin_step(key);
    for (int p = 0; p < kPhaseCount; ++p) {
      const Phase phase = static_cast<Phase>(p);
      cpu->run_phase(phase, key);
      gpu->run_phase(phase, key);
      // Each slot at its own check moment (33, 34, 35: the one buffer after each backward stage).
      for (int s = 0; s < kBuiltinSlotCount; ++s) {
        if (builtin_slot(s).phase != phase) continue;
        const SlotView a = gpu->slot(s), b = cpu->slot(s);
        ASSERT_EQ(a.count, b.count) << s;
        ASSERT_EQ(a.shape, b.shape) << s;
        const double e = rel_error(a, b);
        worst[s] = std::max(worst[s], e);
      }
    }
    gpu->checks().end_step();  // the step's record: its scalars
    const StepLosses g = gpu->losses(), r = cpu->losses();
    std::printf(
        "step %d losses CUDA/CPU: total %.8g/%.8g c51 %.8g/%.8g iqn %.8g/%.8g grad_norm "
        "%.8g/%.8g\n",
        st, g.total, r.total, g.c51, r.c51, g.iqn, r.iqn, g.grad_norm, r.grad_norm);
    for (auto [x, y] : {std::pair{g.total, r.total},
                        {g.c51, r.c51},
                        {g.mse, r.mse},
                        {g.cql, r.cql},
                        {g.iqn, r.iqn},
                        {g.aux, r.aux},
                        {g.ens, r.ens},
                        {g.grad_norm, r.grad_norm}})
      EXPECT_NEAR(x, y, 2e-5 * std::max(1.0, std::abs(y)));
    for (int gi = 0; gi < kGroupCount; ++gi)
      EXPECT_NEAR(g.group_norm[gi], r.group_norm[gi], 2e-5 * std::max(1.0, r.group_norm[gi]));
  }
  std::printf(
      "max norm-wise relative error CUDA vs CPU (float32) per slot over %d steps, default size:\n",
      kSteps);
  for (int s = 0; s < kBuiltinSlotCount; ++s) {
    std::printf("| %2d | %-22s | %.2e |\n", s, std::string(builtin_slot(s).name).c_str(), worst[s]);
    // float32-level: the two backends sum in different orders (cuBLAS vs Eigen) and the
    // trajectories drift apart by rounding over the steps.
    EXPECT_LT(worst[s], 1e-4) << s << " " << builtin_slot(s).name;
  }
  EXPECT_EQ(gpu->adam_step(), cpu->adam_step());
  // The draws are bit-identical, not just close.
  EXPECT_EQ(worst[kBatch], 0.0);
  EXPECT_EQ(worst[kIqnTau], 0.0);
}

// The default config watches for a gradient collapse at every step: one record per step.
TEST(CudaBackend, RunModeStepMakesOneSmallDeviceToHostCopy) {
  Config c;
  c.run.folds = 1;
  c.run.steps_per_fold = 12;
  Session s(c, cuda::make_cuda_backend(c));
  const Backend* ds = &s.backend();
  s.step();  // the fold's set-up (transitions upload) is not a step's traffic
  const auto before = ds->device_to_host_copies();
  RunUntil n;
  n.kind = RunUntil::Kind::Steps;
  n.steps = 10;
  s.run(n);
  ASSERT_FALSE(s.folds()[0].flags.any_fired());
  // One status record per step (status word + loss scalars + norms), nothing else.
  EXPECT_EQ(ds->device_to_host_copies() - before, 10);
}

TEST(CudaBackend, WithoutADeviceOrInFloat64TheChoiceIsClear) {
  Config c;
  c.model.precision = Precision::Float64;
  EXPECT_THROW(cuda::make_cuda_backend(c), ConfigError);
}
