// The trainer learns, is deterministic, and its float32 and float64 modes agree.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model/backend.h"
#include "session/session.h"
#include "test_support.h"

using namespace nanscope;

namespace {

Config small_config() {
  Config c;
  c.run.folds = 2;
  c.run.steps_per_fold = 400;
  c.run.seed = 3;
  c.data.bars = 3000;
  c.model.batch = 64;
  c.model.hidden = 64;
  c.model.bottleneck = 32;
  c.model.iqn_n = 8;
  c.model.iqn_n_target = 8;
  c.model.iqn_k = 8;
  c.model.iqn_cos = 16;
  c.model.aux_hidden = 32;
  return c;
}

double mean_c51(const std::vector<StepRecord>& h, std::size_t from, std::size_t n) {
  double s = 0;
  for (std::size_t i = from; i < from + n; ++i) s += h[i].losses.c51;
  return s / static_cast<double>(n);
}

}  // namespace

TEST(Training, C51LossFallsOnTheDefaultSyntheticData) {
  Config c = small_config();
  Session s(c, make_cpu_backend(c));
  s.run();
  const auto& h = s.history();
  ASSERT_EQ(h.size(), 800u);
  const double start = mean_c51(h, 0, 20), end = mean_c51(h, h.size() - 20, 20);
  RecordProperty("c51_start", std::to_string(start));
  RecordProperty("c51_end", std::to_string(end));
  EXPECT_NEAR(start, std::log(c.model.atoms), 0.05);  // a fresh network predicts ~uniform atoms
  EXPECT_LT(end, start - 0.15) << "start " << start << " end " << end;
  for (const auto& r : h) ASSERT_TRUE(std::isfinite(r.losses.total)) << "step " << r.global_step;
  ASSERT_EQ(s.folds().size(), 2u);
  EXPECT_EQ(s.folds()[1].steps, 400);
  EXPECT_DOUBLE_EQ(s.folds()[1].c51_last, h.back().losses.c51);
}

TEST(Training, SameSeedSameRunBitForBit) {
  Config c = test::tiny_config(Precision::Float32);
  Session a(c, make_cpu_backend(c)), b(c, make_cpu_backend(c));
  a.run();
  b.run();
  ASSERT_EQ(a.history().size(), b.history().size());
  for (std::size_t i = 0; i < a.history().size(); ++i)
    EXPECT_EQ(a.history()[i].losses.total, b.history()[i].losses.total);
  EXPECT_EQ(a.backend().read_param("encoder.w1"), b.backend().read_param("encoder.w1"));
  c.run.seed += 1;
  Session other(c, make_cpu_backend(c));
  other.run();
  EXPECT_NE(a.history().back().losses.total, other.history().back().losses.total);
}

TEST(Training, Float32AgreesWithFloat64) {
  Config c32 = test::tiny_config(Precision::Float32), c64 = test::tiny_config(Precision::Float64);
  Session a(c32, make_cpu_backend(c32)), b(c64, make_cpu_backend(c64));
  for (int i = 0; i < 4; ++i) {
    a.step();
    b.step();
    EXPECT_NEAR(a.history().back().losses.total, b.history().back().losses.total,
                1e-4 * std::abs(b.history().back().losses.total));
  }
  for (int slot : {int(kBnDConcat), int(kBwDHS2Iqn), int(kDAdvLogits)}) {
    SlotView x = a.backend().slot(slot), y = b.backend().slot(slot);
    ASSERT_EQ(x.count, y.count);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < x.count; ++i) {
      diff += (x.at(i) - y.at(i)) * (x.at(i) - y.at(i));
      norm += y.at(i) * y.at(i);
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-3) << builtin_slot(slot).name;
  }
}

TEST(Training, PhasesRunInTheSpecOrderAndStepsAdvance) {
  Config c = test::tiny_config(Precision::Float32);
  Session s(c, make_cpu_backend(c));
  const char* expected[] = {
      "sample",       "forward",          "backward.main",        "backward.aux",
      "backward.iqn", "backward.encoder", "checks.post_backward", "optimizer"};
  for (const char* name : expected) {
    EXPECT_EQ(s.history().size(), 0u);
    EXPECT_EQ(phase_name(s.step_phase()), name);
  }
  EXPECT_EQ(s.history().size(), 1u);
  EXPECT_EQ(s.step_in_fold(), 1);
  EXPECT_EQ(s.backend().adam_step(), 1);
  while (!s.finished()) s.step();
  EXPECT_EQ(s.global_step(), c.run.folds * c.run.steps_per_fold);
  EXPECT_EQ(s.history().back().fold, c.run.folds - 1);
}

TEST(Training, CallSitesOfTheBackwardChecksComeInOrder) {
  struct Recorder : SlotObserver {
    std::vector<int> checks;
    void check(int slot) override { checks.push_back(slot); }
  } rec;
  Config c = test::tiny_config(Precision::Float32);
  Session s(c, make_cpu_backend(c));
  s.backend().set_observer(&rec);
  s.step();
  auto pos = [&](int slot) {
    return std::find(rec.checks.begin(), rec.checks.end(), slot) - rec.checks.begin();
  };
  EXPECT_EQ(rec.checks.size(),
            static_cast<std::size_t>(kBuiltinSlotCount));  // every slot exists here
  EXPECT_LT(pos(kBwDHS2Main), pos(kBwDHS2Aux));
  EXPECT_LT(pos(kBwDHS2Aux), pos(kBwDHS2Iqn));
  for (int late = kDValueLogits; late <= kBnDConcat; ++late) EXPECT_GT(pos(late), pos(kBwDHS2Iqn));
  EXPECT_GT(pos(kParams), pos(kBnDConcat));
  EXPECT_EQ(rec.checks.front(), kBatch);
}

TEST(Training, WithoutIqnTheHeadAndItsSlotsDoNotExist) {
  Config c = test::tiny_config(Precision::Float32);
  c.loss.lambda_iqn = 0;
  Session s(c, make_cpu_backend(c));
  s.step();
  for (int slot = 0; slot < kBuiltinSlotCount; ++slot)
    EXPECT_EQ(s.backend().slot(slot).exists(), !builtin_slot(slot).iqn_only) << slot;
  EXPECT_EQ(s.backend().layout().find("iqn.out.w"), nullptr);
  EXPECT_TRUE(std::isfinite(s.history().back().losses.total));
}
