#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "data/bars.h"
#include "data/philox.h"
#include "data/transitions.h"
#include "model/backend.h"
#include "model/batch_context.h"
#include "model/cpu_model.h"
#include "test_support.h"

using namespace nanscope;

TEST(Philox, KnownAnswerVectorsOfRandom123) {
  auto a = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(a[0], 0x6627e8d5u);
  EXPECT_EQ(a[1], 0xe169c58du);
  EXPECT_EQ(a[2], 0xbc57ac4cu);
  EXPECT_EQ(a[3], 0x9b00dbd8u);
  auto b =
      philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(b[0], 0x408f276du);
  EXPECT_EQ(b[1], 0x41c83b0eu);
  EXPECT_EQ(b[2], 0xa20bc7c6u);
  EXPECT_EQ(b[3], 0x6d5451fdu);
}

TEST(Philox, DrawsAreAPureFunctionOfTheirCounter) {
  EXPECT_EQ(draw_u32(5, DrawStream::BatchIndex, 2, 9, 17),
            draw_u32(5, DrawStream::BatchIndex, 2, 9, 17));
  EXPECT_NE(draw_u32(5, DrawStream::BatchIndex, 2, 9, 17),
            draw_u32(5, DrawStream::BatchIndex, 2, 10, 17));
  EXPECT_NE(draw_u32(5, DrawStream::BatchIndex, 2, 9, 17),
            draw_u32(6, DrawStream::BatchIndex, 2, 9, 17));
  double lo = 1, hi = 0;
  for (std::uint32_t u : {0u, 1u, 0xffffffffu}) {
    lo = std::min(lo, u32_to_open01(u));
    hi = std::max(hi, u32_to_open01(u));
  }
  EXPECT_GT(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_EQ(u32_to_index(0xffffffffu, 7), 6u);
}

TEST(SyntheticBars, DeterministicHeavyTailedAndConsistent) {
  DataConfig p;
  auto a = generate_synthetic_bars(p, 3, 5000);
  auto b = generate_synthetic_bars(p, 3, 5000);
  auto c = generate_synthetic_bars(p, 4, 5000);
  ASSERT_EQ(a.bars.size(), 5000u);
  EXPECT_EQ(a.bars[4999].close, b.bars[4999].close);
  EXPECT_NE(a.bars[4999].close, c.bars[4999].close);
  double m2 = 0, m4 = 0;
  for (int t = 1; t < 5000; ++t) {
    const Bar& bar = a.bars[t];
    EXPECT_GE(bar.high, std::max(bar.open, bar.close));
    EXPECT_LE(bar.low, std::min(bar.open, bar.close));
    EXPECT_GT(bar.volume, 0);
    double r = std::log(bar.close / a.bars[t - 1].close);
    m2 += r * r;
    m4 += r * r * r * r;
  }
  m2 /= 4999;
  m4 /= 4999;
  EXPECT_NEAR(std::sqrt(m2), 0.01, 0.004);  // sigma of the stationary GARCH variance ~ 1%
  EXPECT_GT(m4 / (m2 * m2), 4.0);           // fat tails: excess kurtosis from t(4) + GARCH + jumps
}

TEST(Folds, TooShortWindowsNameTheKeys) {
  try {
    plan_folds(300, 6, 3);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("run.folds"), std::string::npos);
  }
  auto w = plan_folds(1000, 3, 3);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].begin_bar, 0);
  EXPECT_EQ(w[2].end_bar, 1000);
}

TEST(Transitions, NStepReturnsRewardsAndTerminals) {
  Config cfg = test::tiny_config();
  auto bars = generate_synthetic_bars(cfg.data, cfg.run.seed, cfg.data.bars);
  auto windows = plan_folds(cfg.data.bars, cfg.run.folds, cfg.data.n_step);
  TransitionSet ts = build_transitions(bars, windows[1], cfg);
  ASSERT_GT(ts.count, 10);
  const double g = cfg.model.gamma;
  const int n = cfg.data.n_step;
  for (int i = 0; i < ts.count; ++i) {
    double r = 0;
    for (int k = 0; k < n && i + k < ts.count; ++k) r += std::pow(g, k) * ts.reward[i + k];
    EXPECT_NEAR(ts.ret[i], r, 1e-12);
    EXPECT_EQ(ts.done[i], i + n >= ts.count ? 1.0 : 0.0);
  }
  // The reward of a wide-exit action is the scaled P&L minus the cost of the position change.
  const double sizes[3] = {0.25, 0.5, 1.0};
  int checked = 0;
  for (int i = 1; i < ts.count; ++i) {
    const int32_t* a = &ts.action[i * 3];
    const int32_t* prev = &ts.action[(i - 1) * 3];
    if (a[2] != 1) continue;
    const int t = ts.first_bar + i;
    const double pos = (a[0] - 1) * sizes[a[1]], prev_pos = (prev[0] - 1) * sizes[prev[1]];
    const double ret = std::log(bars.bars[t + 1].close / bars.bars[t].close);
    EXPECT_NEAR(ts.reward[i],
                cfg.data.reward_scale * (pos * ret - cfg.data.cost * std::abs(pos - prev_pos)),
                1e-9);
    ++checked;
  }
  EXPECT_GT(checked, 5);
  // s' of a non-terminal transition is the state n bars later.
  for (int f = 0; f < kFeatureCount; ++f)
    EXPECT_EQ(ts.next_state[f], ts.state[n * kFeatureCount + f]);
  // Position features are a one-hot.
  for (int i = 0; i < ts.count; ++i)
    EXPECT_EQ(ts.state[i * kFeatureCount + 20] + ts.state[i * kFeatureCount + 21] +
                  ts.state[i * kFeatureCount + 22],
              1.0);
}

TEST(BatchSampler, SameKeyGivesTheSameBatchOnEitherPrecision) {
  Config cfg = test::tiny_config();
  auto bars = generate_synthetic_bars(cfg.data, cfg.run.seed, cfg.data.bars);
  TransitionSet ts = build_transitions(bars, plan_folds(cfg.data.bars, 2, 3)[0], cfg);
  CpuModel<float> f(cfg);
  CpuModel<double> d(cfg);
  f.load_fold(ts);
  d.load_fold(ts);
  StepKey key{cfg.run.seed, 0, 3, 3};
  f.sample(key);
  d.sample(key);
  ASSERT_EQ(f.slots[kBatch].size(), d.slots[kBatch].size());
  for (std::size_t i = 0; i < f.slots[kBatch].size(); ++i)
    EXPECT_EQ(f.slots[kBatch][i], static_cast<float>(d.slots[kBatch][i]));
  EXPECT_EQ(f.actions, d.actions);
  for (std::size_t i = 0; i < f.slots[kIqnTau].size(); ++i)
    EXPECT_EQ(static_cast<double>(f.slots[kIqnTau][i]), d.slots[kIqnTau][i]);  // exact in float
  std::vector<float> first = f.slots[kBatch];
  f.sample(StepKey{cfg.run.seed, 0, 4, 4});
  EXPECT_NE(first, f.slots[kBatch]);
  f.sample(key);
  EXPECT_EQ(first, f.slots[kBatch]);
}

TEST(BatchContext, LocatesEveryElementOfTheBatchSlot) {
  Config c = test::tiny_config(Precision::Float32);
  const Dims d = Dims::from(c);
  const std::size_t B = static_cast<std::size_t>(d.B), F = static_cast<std::size_t>(d.F);
  auto at = [&](std::size_t flat) {
    const BatchElement e = locate_batch_element(d, flat);
    return std::string(e.field) + ":" + std::to_string(e.index);
  };
  EXPECT_EQ(at(0), "obs:0");
  EXPECT_EQ(at(B * F - 1), "obs:" + std::to_string(B * F - 1));
  EXPECT_EQ(at(B * F), "next_obs:0");
  EXPECT_EQ(at(2 * B * F + 3), "returns:3");
  EXPECT_EQ(at(2 * B * F + B), "done:0");
  EXPECT_EQ(at(2 * B * F + 2 * B + 1), "next_bar:1");
  const std::size_t total = B * (2 * F + 2 + static_cast<std::size_t>(d.AO));
  EXPECT_EQ(at(total - 1), "next_bar:" + std::to_string(B * static_cast<std::size_t>(d.AO) - 1));
  EXPECT_THROW(locate_batch_element(d, total), InternalError);
}
