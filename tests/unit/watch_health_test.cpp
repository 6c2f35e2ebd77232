// The watch conditions read from the slots' health (docs/slots.md, "Watches" and "Slot health"):
// each trips on a real mechanism and stays quiet on the healthy run; absmax sees lr-explosion
// coming a step before the first fire. The CPU backend here; tests/gpu/watch_gpu_test.cpp runs the
// same mechanisms on the CUDA backend.
#include <gtest/gtest.h>

#include <cmath>

#include "core/config_io.h"
#include "session_checks.h"
#include "test_support.h"

using namespace nanscope;

namespace {

using test::with;

struct Ran {
  std::vector<WatchTrip> trips;
  std::optional<int> first_fire;  // the fold's first step with a fire
};

Ran run(const Config& c) {
  Session s(c, make_cpu_backend(c));
  s.run();
  Ran r{s.watch_trips(), std::nullopt};
  for (const StepRecord& h : s.history())
    for (auto f : h.flags)
      if (f && !r.first_fire) r.first_fire = h.step;
  return r;
}

const WatchTrip* first_of(const Ran& r, WatchCondition c) {
  for (const WatchTrip& t : r.trips)
    if (t.condition == c) return &t;
  return nullptr;
}

// Every condition on, each at the threshold its test trips it with.
const std::vector<std::string> kAllOn = {"watch.absmax=1e6",
                                         "watch.c51_mass=1e-3",
                                         "watch.quantile_crossing=0.3",
                                         "watch.cql_margin=25",
                                         "watch.grad_explode=50",
                                         "watch.grad_vanish=1e-9",
                                         "watch.update_ratio_floor=1e-9",
                                         "watch.update_ratio_ceiling=0.5",
                                         "watch.dead_relu=0.9",
                                         "watch.overflow_margin=1e30",
                                         "watch.underflow_share=0.01",
                                         "watch.warmup=50"};

}  // namespace

TEST(WatchHealth, AbsmaxTripsOnLrExplosionAStepBeforeTheFirstFire) {
  // lr = 1e12: step 0's update leaves parameters near 1e12 (finite); step 1's forward overflows.
  const Ran r = run(with(test::scenario_config("lr-explosion", 4), {"watch.absmax=1e6"}));
  ASSERT_TRUE(r.first_fire);
  EXPECT_EQ(*r.first_fire, 1);
  const WatchTrip* t = first_of(r, WatchCondition::Absmax);
  ASSERT_NE(t, nullptr);
  EXPECT_LT(t->step, *r.first_fire);
  EXPECT_EQ(t->slot, kParams);
  EXPECT_GT(t->value, 1e11);
  EXPECT_EQ(t->threshold, 1e6);
}

TEST(WatchHealth, OverflowMarginTripsOnLrExplosionAStepBeforeTheFirstFire) {
  // The same parameters near 1e12 at step 0 are within 1e30 of float32's 3.4e38.
  const Ran r = run(with(test::scenario_config("lr-explosion", 4), {"watch.overflow_margin=1e30"}));
  ASSERT_TRUE(r.first_fire);
  const WatchTrip* t = first_of(r, WatchCondition::OverflowMargin);
  ASSERT_NE(t, nullptr);
  EXPECT_LT(t->step, *r.first_fire);
  EXPECT_EQ(t->slot, kParams);
  EXPECT_LT(t->value, 1e30);  // the factor left: float32's largest over the parameters' absmax
  EXPECT_GT(t->value, 1.0);
  EXPECT_EQ(t->threshold, 1e30);
}

TEST(WatchHealth, C51MassTripsWhenTheLogSoftmaxLosesMass) {
  // lr = 1: the logits reach ~1e6 at step 2, where float32 spacing (0.06) eats log-softmax mass;
  // nothing is ever non-finite.
  const Ran r =
      run(with(test::scenario_config("healthy", 6), {"optim.lr=1", "watch.c51_mass=1e-3"}));
  EXPECT_FALSE(r.first_fire);
  const WatchTrip* t = first_of(r, WatchCondition::C51Mass);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->slot == kLogProbs || t->slot == kTargetLogProbs || t->slot == kProjTarget);
  EXPECT_GT(t->value, 1e-3);
  EXPECT_LT(t->value, 1.0);
}

TEST(WatchHealth, QuantileCrossingTripsWhenTheIqnHeadIsFrozen) {
  // A learner's quantiles start unordered (about half the pairs crossed) and learn their order;
  // with the IQN group's learning rate 0 they never do. Past the warm-up: 0.40 crossed, healthy
  // 0.04.
  const Ran r =
      run(with(test::scenario_config("healthy", 52),
               {"optim.lr_mult.iqn=0", "watch.quantile_crossing=0.3", "watch.warmup=50"}));
  const WatchTrip* t = first_of(r, WatchCondition::QuantileCrossing);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->slot, kIqnQuantiles);
  EXPECT_EQ(t->step, 50);
  EXPECT_GT(t->value, 0.3);
  EXPECT_LT(t->value, 0.5);
}

TEST(WatchHealth, CqlMarginTripsWhenTheLogitsHeadForOverflow) {
  // lr = 1000: the value and advantage logits jump to ~5e18 at step 1 (19.8 decades below float
  // overflow) and nothing fires.
  const Ran r =
      run(with(test::scenario_config("healthy", 3), {"optim.lr=1000", "watch.cql_margin=25"}));
  EXPECT_FALSE(r.first_fire);
  const WatchTrip* t = first_of(r, WatchCondition::CqlMargin);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->step, 1);
  EXPECT_TRUE(t->slot == kValueLogits || t->slot == kAdvLogits);
  EXPECT_LT(t->value, 25);
  EXPECT_GT(t->value, 15);
}

TEST(WatchHealth, UpdateRatioTripsBelowTheFloorAndAboveTheCeiling) {
  {  // grad-collapse: the encoder's gradient is exactly zero, so is its update
    const Ran r = run(with(test::scenario_config("grad-collapse", 3),
                           {"watch.update_ratio_floor=1e-9", "halt.collapse_patience=0"}));
    const WatchTrip* t = first_of(r, WatchCondition::UpdateRatio);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->group, 0);  // encoder
    EXPECT_EQ(t->slot, kParams);
    EXPECT_EQ(t->value, 0.0);
  }
  {  // lr = 1: every group's weights move by more than half their norm at step 0
    const Ran r = run(with(test::scenario_config("healthy", 2),
                           {"optim.lr=1", "watch.update_ratio_ceiling=0.5"}));
    const WatchTrip* t = first_of(r, WatchCondition::UpdateRatio);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->step, 0);
    EXPECT_GT(t->value, 0.5);
    EXPECT_EQ(t->threshold, 0.5);
  }
}

TEST(WatchHealth, DeadReluTripsOnTheDeadEncoder) {
  const Ran r = run(with(test::scenario_config("grad-collapse", 2),
                         {"watch.dead_relu=0.9", "halt.collapse_patience=0"}));
  const WatchTrip* t = first_of(r, WatchCondition::DeadRelu);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->slot, kHS1);
  EXPECT_EQ(t->step, 0);
  EXPECT_EQ(t->value, 1.0);  // every unit's output exactly zero
}

TEST(WatchHealth, EveryConditionStaysQuietOnTheHealthyRun) {
  const Ran r = run(with(test::scenario_config("healthy", 70), kAllOn));
  EXPECT_FALSE(r.first_fire);
  for (const WatchTrip& t : r.trips)
    ADD_FAILURE() << name_of(t.condition) << " tripped at step " << t.step << " (slot " << t.slot
                  << ", group " << t.group << ", value " << t.value << ")";
}

TEST(WatchHealth, TheCpuHealthRowIsWhatItsDefinitionSays) {
  // Slot 20 (total_loss) is one value; slot 1 (h_s1) a relu output: compare with the buffer itself.
  const Config c = test::scenario_config("healthy", 1);
  Session s(c, make_cpu_backend(c));
  s.step();
  const SlotHealthRows& h = s.history().back().health;
  const HealthRow& total = h[kTotalLoss];
  EXPECT_EQ(total[kHealthMin], total[kHealthMax]);
  EXPECT_FLOAT_EQ(total[kHealthMax], static_cast<float>(s.history().back().losses.total));
  EXPECT_EQ(total[kHealthNonfinite], 0.f);
  const SlotView v = s.backend().slot(kHS1);
  double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0, zeros = 0;
  for (std::size_t i = 0; i < v.count; ++i) {
    const double x = v.at(i);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
    sq += x * x;
    zeros += x == 0;
  }
  const HealthRow& r = h[kHS1];
  EXPECT_EQ(r[kHealthMin], static_cast<float>(lo));
  EXPECT_EQ(r[kHealthMax], static_cast<float>(hi));
  EXPECT_FLOAT_EQ(r[kHealthMean], static_cast<float>(sum / v.count));
  EXPECT_FLOAT_EQ(r[kHealthRms], static_cast<float>(std::sqrt(sq / v.count)));
  EXPECT_FLOAT_EQ(r[kHealthZeroFraction], static_cast<float>(zeros / v.count));
  EXPECT_TRUE(std::isnan(r[kHealthMassError]));  // not a C51 row, and the watch is off
  // The reduced-precision fields against float32's limits, in float64.
  double least = INFINITY, subnormal = 0;
  for (std::size_t i = 0; i < v.count; ++i) {
    const double a = std::fabs(v.at(i));
    if (a == 0) continue;
    least = std::min(least, a);
    subnormal += a < std::numeric_limits<float>::min();
  }
  const double top = std::max(std::fabs(lo), std::fabs(hi));
  EXPECT_EQ(r[kHealthOverflowMargin],
            static_cast<float>(std::log2(std::numeric_limits<float>::max()) - std::log2(top)));
  EXPECT_EQ(r[kHealthUnderflowShare], static_cast<float>(subnormal / v.count));
  EXPECT_EQ(r[kHealthDynamicRange], static_cast<float>(std::log2(top) - std::log2(least)));
}

TEST(WatchHealth, MassErrorAndCrossingAreWhatTheBuffersSay) {
  // With both watches on, slot 6's c51_mass_error is the largest |sum(exp(row)) - 1| over its rows
  // and slot 14's quantile_crossing the fraction of tau-ordered pairs out of order (slot 12's
  // taus), computed here from the buffers the step left.
  const Config c = with(test::scenario_config("healthy", 1),
                        {"watch.c51_mass=1e-3", "watch.quantile_crossing=0.3"});
  Session s(c, make_cpu_backend(c));
  s.step();
  const SlotHealthRows& h = s.history().back().health;

  const SlotView lp = s.backend().slot(kLogProbs);
  const std::size_t atoms = static_cast<std::size_t>(c.model.atoms);
  ASSERT_EQ(lp.count % atoms, 0u);
  double worst = 0;
  for (std::size_t row = 0; row < lp.count / atoms; ++row) {
    double mass = 0;
    for (std::size_t i = 0; i < atoms; ++i) mass += std::exp(lp.at(row * atoms + i));
    worst = std::max(worst, std::fabs(mass - 1));
  }
  EXPECT_GT(worst, 0);  // float32 log-softmax rows are never exactly of mass 1
  EXPECT_NEAR(h[kLogProbs][kHealthMassError], worst, 1e-6 * worst + 1e-12);

  const SlotView q = s.backend().slot(kIqnQuantiles), tau = s.backend().slot(kIqnTau);
  const std::size_t B = static_cast<std::size_t>(c.model.batch), N = tau.count / B,
                    A = q.count / tau.count;
  ASSERT_EQ(B * N * A, q.count);
  std::size_t crossed = 0, ordered = 0;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t a = 0; a < A; ++a)
      for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = 0; j < N; ++j)
          if (tau.at(b * N + i) < tau.at(b * N + j)) {
            ++ordered;
            crossed += q.at((b * N + i) * A + a) > q.at((b * N + j) * A + a);
          }
  ASSERT_GT(ordered, 0u);
  const double fraction = static_cast<double>(crossed) / static_cast<double>(ordered);
  EXPECT_GT(fraction, 0.05);  // an untrained head: many pairs crossed
  EXPECT_FLOAT_EQ(h[kIqnQuantiles][kHealthCrossing], static_cast<float>(fraction));
}

TEST(WatchHealth, HealthOffMeasuresNothing) {
  const Config c = with(test::scenario_config("healthy", 1), {"sentinel.health=false"});
  Session s(c, make_cpu_backend(c));
  s.step();
  for (const HealthRow& r : s.history().back().health) EXPECT_FALSE(measured(r));
}

TEST(WatchHealth, TiedQuantilesAreNotCrossedAndAFullRowHasMassOne) {
  // quantile_crossing counts pairs strictly out of order: a head whose quantiles are all equal (a
  // dead relu, a saturated output) crosses nothing; one pair reversed is one crossing.
  const float taus[] = {0.1f, 0.2f, 0.3f, 0.4f};
  const float tied[] = {1, 1, 1, 1};
  const CrossingCount t = quantile_crossings(tied, 1, taus, 4);
  EXPECT_EQ(t.ordered, 6u);
  EXPECT_EQ(t.crossed, 0u);
  const float one_reversed[] = {1, 3, 2, 4};
  EXPECT_EQ(quantile_crossings(one_reversed, 1, taus, 4).crossed, 1u);
  // c51_mass_error: |sum - 1| of probabilities, or of exp(log-probabilities).
  const double probs[] = {0.25, 0.25, 0.5};
  EXPECT_EQ(c51_mass_error(probs, 3, false), 0.0);
  const double logs[] = {std::log(0.5), std::log(0.25), std::log(0.125)};
  EXPECT_NEAR(c51_mass_error(logs, 3, true), 0.125, 1e-15);
}
