// Slot health and the watches read from it on the CUDA backend (docs/slots.md, "Slot health"):
// the fused check's rows agree with the CPU backend's within float tolerance, absmax sees
// lr-explosion coming before the first fire, and every condition's mechanism trips it at the step
// it trips on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "check_plan_checks.h"
#include "core/config_io.h"
#include "cuda_backend.h"
#include "session/session.h"
#include "test_seams.h"
#include "unit/session_checks.h"
#include "unit/test_support.h"

using namespace nanscope;

namespace {

using test::with;

std::unique_ptr<Session> ran(const Config& c, bool cuda) {
  SessionOptions o;
  o.graph = cuda;
  auto s = std::make_unique<Session>(c, cuda ? cuda::make_cuda_backend(c) : make_cpu_backend(c), o);
  s->run();
  return s;
}

std::optional<int> first_fire(const Session& s) {
  for (const StepRecord& h : s.history())
    for (auto f : h.flags)
      if (f) return h.step;
  return std::nullopt;
}

}  // namespace

// The CUDA rows against the CPU's (both float32): the largest differences over three graphed
// steps of the default size, measured on the H200 (2026-12-05, driver 580.159.04; the same bits in
// two runs, the step being deterministic), and the tolerances, each about 10x its measurement, so
// that a bias of ten float32 roundings fails. A relative difference is |CUDA - CPU| / (|CPU| +
// CPU rms), so that a field near zero is judged against its buffer's scale.
constexpr double kRowRelTol = 1.5e-4;  // min, max, mean, rms: measured 1.32e-5
constexpr double kZeroFractionTol =
    1.5e-4;                             // zero_fraction: measured 1.53e-5 (one value in 65,536)
constexpr double kMassErrorTol = 4e-7;  // c51_mass_error: measured 3.66e-8
constexpr double kCrossingTol = 1e-5;   // quantile_crossing: measured 9.83e-7 (one pair)

TEST(CudaHealth, RowsAgreeWithTheCpuBackend) {
  // Every learner field on (thresholds that cannot trip), three graphed steps.
  const Config c =
      with(test::scenario_config("healthy", 3),
           {"watch.c51_mass=10", "watch.quantile_crossing=1", "watch.update_ratio_ceiling=1e30"});
  auto cpu = ran(c, false);
  auto gpu = ran(c, true);
  ASSERT_EQ(cpu->history().size(), gpu->history().size());
  int compared = 0;
  double worst_rel = 0, worst_zero = 0, worst_mass = 0, worst_crossing = 0;
  for (std::size_t i = 0; i < cpu->history().size(); ++i) {
    const StepRecord &a = cpu->history()[i], &b = gpu->history()[i];
    for (int s = 0; s < kBuiltinSlotCount; ++s) {
      const HealthRow &x = a.health[s], &y = b.health[s];
      ASSERT_EQ(measured(x), measured(y)) << "step " << i << " slot " << s;
      if (!measured(x)) continue;
      for (int k : {kHealthMin, kHealthMax, kHealthMean, kHealthRms}) {
        const double rel = std::fabs(static_cast<double>(y[k]) - x[k]) /
                           (std::fabs(x[k]) + std::fabs(x[kHealthRms]) + 1e-30);
        worst_rel = std::max(worst_rel, rel);
        EXPECT_LE(rel, kRowRelTol) << "step " << i << " slot " << builtin_slot(s).name << " "
                                   << kHealthFieldNames[k] << ": CPU " << x[k] << ", CUDA " << y[k];
      }
      EXPECT_EQ(y[kHealthNonfinite], x[kHealthNonfinite]) << builtin_slot(s).name;
      const double zero =
          std::fabs(static_cast<double>(y[kHealthZeroFraction]) - x[kHealthZeroFraction]);
      worst_zero = std::max(worst_zero, zero);
      EXPECT_LE(zero, kZeroFractionTol) << builtin_slot(s).name;
      EXPECT_EQ(std::isnan(y[kHealthMassError]), std::isnan(x[kHealthMassError]))
          << builtin_slot(s).name;
      if (!std::isnan(x[kHealthMassError])) {
        const double mass =
            std::fabs(static_cast<double>(y[kHealthMassError]) - x[kHealthMassError]);
        worst_mass = std::max(worst_mass, mass);
        EXPECT_LE(mass, kMassErrorTol) << builtin_slot(s).name;
      }
      EXPECT_EQ(std::isnan(y[kHealthCrossing]), std::isnan(x[kHealthCrossing]));
      if (!std::isnan(x[kHealthCrossing])) {
        const double crossing =
            std::fabs(static_cast<double>(y[kHealthCrossing]) - x[kHealthCrossing]);
        worst_crossing = std::max(worst_crossing, crossing);
        EXPECT_LE(crossing, kCrossingTol) << "step " << i;
      }
      ++compared;
    }
  }
  std::printf(
      "health rows, CUDA against CPU, largest differences: min/max/mean/rms %.3g relative, "
      "zero_fraction %.3g, c51_mass_error %.3g, quantile_crossing %.3g\n",
      worst_rel, worst_zero, worst_mass, worst_crossing);
  EXPECT_GT(compared, 3 * 30);
  const HealthRow& q = gpu->history()[0].health[kIqnQuantiles];
  std::printf(
      "step 0 iqn_quantiles: CPU crossing %.4f, CUDA %.4f; log_probs mass error CPU %.3g, "
      "CUDA %.3g\n",
      cpu->history()[0].health[kIqnQuantiles][kHealthCrossing], q[kHealthCrossing],
      cpu->history()[0].health[kLogProbs][kHealthMassError],
      gpu->history()[0].health[kLogProbs][kHealthMassError]);
}

TEST(CudaHealth, AbsmaxTripsOnLrExplosionBeforeTheFirstFire) {
  const Config c = with(test::scenario_config("lr-explosion", 4), {"watch.absmax=1e6"});
  auto gpu = ran(c, true);
  const auto fire = first_fire(*gpu);
  ASSERT_TRUE(fire);
  EXPECT_EQ(*fire, 1);
  ASSERT_FALSE(gpu->watch_trips().empty());
  const WatchTrip& t = gpu->watch_trips()[0];
  EXPECT_EQ(t.condition, WatchCondition::Absmax);
  EXPECT_LT(t.step, *fire);
  EXPECT_EQ(t.slot, kParams);
  std::printf("absmax on CUDA: slot %d step %d value %.4g; first fire step %d\n", t.slot, t.step,
              t.value, *fire);
}

TEST(CudaHealth, EveryConditionTripsAsOnTheCpu) {
  struct Mechanism {
    const char* scenario;
    int steps;
    std::vector<std::string> sets;
    WatchCondition condition;
  };
  const std::vector<Mechanism> mechanisms = {
      {"healthy", 6, {"optim.lr=1", "watch.c51_mass=1e-3"}, WatchCondition::C51Mass},
      {"healthy",
       52,
       {"optim.lr_mult.iqn=0", "watch.quantile_crossing=0.3", "watch.warmup=50"},
       WatchCondition::QuantileCrossing},
      {"healthy", 3, {"optim.lr=1000", "watch.cql_margin=25"}, WatchCondition::CqlMargin},
      {"grad-collapse",
       3,
       {"watch.update_ratio_floor=1e-9", "halt.collapse_patience=0"},
       WatchCondition::UpdateRatio},
      {"healthy", 2, {"optim.lr=1", "watch.update_ratio_ceiling=0.5"}, WatchCondition::UpdateRatio},
      {"grad-collapse",
       2,
       {"watch.dead_relu=0.9", "halt.collapse_patience=0"},
       WatchCondition::DeadRelu},
  };
  for (const Mechanism& m : mechanisms) {
    const Config c = with(test::scenario_config(m.scenario, m.steps), m.sets);
    auto cpu = ran(c, false);
    auto gpu = ran(c, true);
    auto first = [&](const Session& s) -> const WatchTrip* {
      for (const WatchTrip& t : s.watch_trips())
        if (t.condition == m.condition) return &t;
      return nullptr;
    };
    const WatchTrip *a = first(*cpu), *b = first(*gpu);
    ASSERT_NE(a, nullptr) << name_of(m.condition);
    ASSERT_NE(b, nullptr) << name_of(m.condition) << " did not trip on CUDA";
    EXPECT_EQ(b->step, a->step) << name_of(m.condition);
    EXPECT_EQ(b->slot, a->slot) << name_of(m.condition);
    EXPECT_EQ(b->group, a->group) << name_of(m.condition);
    std::printf("%s: step %d slot %d group %d, CPU %.5g, CUDA %.5g\n",
                std::string(name_of(m.condition)).c_str(), a->step, a->slot, a->group, a->value,
                b->value);
  }
}

TEST(CudaHealth, HealthOffKeepsTheProducersChecksAndTheSameFires) {
  // sentinel.health = false: Adam and the IQN embedding check their own output again.
  for (const char* inject : {"param:aux.w2@0:1", "slot:iqn_phi@0:1"}) {
    Config c = with(test::scenario_config("healthy", 3), {"sentinel.health=false"});
    c.inject.faults = {inject};
    auto cpu = ran(c, false);
    auto gpu = ran(c, true);
    ASSERT_EQ(cpu->history().size(), gpu->history().size());
    for (std::size_t i = 0; i < cpu->history().size(); ++i) {
      EXPECT_EQ(gpu->history()[i].flags, cpu->history()[i].flags) << inject << " step " << i;
      for (const HealthRow& r : gpu->history()[i].health) EXPECT_FALSE(measured(r));
    }
  }
}

TEST(CudaHealth, TheFusedCheckMeasuresEverySlot) {
  // Health on (the default): the producers leave their slots to the fused check (measured there,
  // the step is faster than with the producers summing: bench/NOTES.md). Without the guard (the
  // default) the step's checks are one launch after the update; with it, one before the update
  // (the guard reads its status word) and one after it for the gradient norms (the guard reads
  // them itself) and Adam's two slots.
  Config guarded = test::scenario_config("healthy", 2);
  guarded.guard.enabled = true;
  for (bool guard : {false, true}) {
    const Config c = guard ? guarded : test::scenario_config("healthy", 2);
    Session s(c, cuda::make_cuda_backend(c));
    s.step();
    cuda::StepCheckPlan plan;
    cuda::log_check_launches(s.backend(), &plan);
    s.step();
    cuda::log_check_launches(s.backend(), nullptr);
    EXPECT_TRUE(plan.in_producers.empty());
    ASSERT_EQ(plan.launches.size(), guard ? 2u : 1u);
    bool phi = false;
    for (const auto& it : plan.launches[0]) phi = phi || it.slot == kIqnPhi;
    EXPECT_TRUE(phi);
    test::expect_after_update_launch(plan, guard);
    if (guard) {
      for (const auto& it : plan.launches[0]) EXPECT_NE(it.slot, kGradNorm);
    }
    for (int slot : {kIqnPhi, kAdamMoments, kParams}) {
      const HealthRow& r = s.history().back().health[static_cast<std::size_t>(slot)];
      ASSERT_TRUE(measured(r)) << slot;
      EXPECT_EQ(r[kHealthNonfinite], 0.f) << slot;
      EXPECT_GT(r[kHealthRms], 0.f) << slot;
    }
    // A relu's output: no negatives, some zeros.
    const HealthRow& phi_row = s.history().back().health[kIqnPhi];
    EXPECT_GE(phi_row[kHealthMin], 0.f);
    EXPECT_GT(phi_row[kHealthZeroFraction], 0.f);
  }
}

TEST(CudaHealth, TheSameRowsOnEveryRun) {
  // Fixed orders and no float atomics: two runs of one seed give the same rows bit for bit.
  const Config c = test::scenario_config("healthy", 3);
  auto a = ran(c, true);
  auto b = ran(c, true);
  ASSERT_EQ(a->history().size(), b->history().size());
  for (std::size_t i = 0; i < a->history().size(); ++i)
    for (int s = 0; s < kBuiltinSlotCount; ++s)
      for (int k = 0; k < kHealthFieldCount; ++k) {
        const float x = a->history()[i].health[static_cast<std::size_t>(s)][k];
        const float y = b->history()[i].health[static_cast<std::size_t>(s)][k];
        EXPECT_TRUE(std::memcmp(&x, &y, sizeof x) == 0)
            << "step " << i << " slot " << builtin_slot(s).name << " " << kHealthFieldNames[k];
      }
}
