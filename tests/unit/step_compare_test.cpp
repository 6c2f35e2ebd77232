// Step compare (docs/slots.md, "Step compare"): the default pair of steps, the table's order and
// its jumps, on made-up rows and on lr-explosion, where the slots that grew on the way to the first
// fire head the table.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "session/step_compare.h"
#include "session_checks.h"
#include "test_support.h"

using namespace nanscope;

namespace {

HealthRow row(float lo, float hi, float mean, float nonfinite) {
  HealthRow r = unmeasured_health();
  r[kHealthMin] = lo;
  r[kHealthMax] = hi;
  r[kHealthMean] = mean;
  r[kHealthRms] = std::fabs(mean);
  r[kHealthNonfinite] = nonfinite;
  r[kHealthZeroFraction] = 0;
  return r;
}

// The default pair's steps alone.
std::optional<std::pair<int, int>> pair_of(const std::vector<bool>& fired,
                                           std::optional<int> first_watch) {
  const auto d = default_compare_steps(fired, first_watch);
  if (!d) return std::nullopt;
  return d->steps;
}

}  // namespace

TEST(StepCompare, TheDefaultPairIsTheLastCleanStepAndTheFirstBadOne) {
  EXPECT_EQ(pair_of({false, false, true, true}, std::nullopt), std::make_pair(1, 2));
  // A watch before the fire does not move it: the fire is what the user asks about.
  EXPECT_EQ(pair_of({false, false, false, true}, 1), std::make_pair(2, 3));
  // No fire: the step before the first watch trip and the trip.
  EXPECT_EQ(pair_of({false, false, false, false}, 2), std::make_pair(1, 2));
  // Nothing at all: the fold's first and last steps.
  EXPECT_EQ(pair_of({false, false, false}, std::nullopt), std::make_pair(0, 2));
  // A fire at step 0 has no clean step before it; a watch trip there is compared with the step
  // after it (the Events dock's trip, never "nothing fired or warned").
  EXPECT_EQ(pair_of({true, true}, std::nullopt), std::nullopt);
  EXPECT_EQ(pair_of({false, false}, 0), std::make_pair(0, 1));
  EXPECT_STREQ(default_compare_steps({false, false, false}, 0)->how,
               "the first watch trip (step 0) / the step after it");
  EXPECT_TRUE(default_compare_steps({false, false, false}, 0)->after_trouble);
  EXPECT_EQ(pair_of({}, std::nullopt), std::nullopt);
}

TEST(StepCompare, RowsAreSortedByGrowthWithJumpsMarked) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  SlotHealthRows a = unmeasured_rows(kBuiltinSlotCount), b = unmeasured_rows(kBuiltinSlotCount);
  a[1] = row(-2, 1, 0.1f, 0);  // |max| 2 -> 40: x20, jumped
  b[1] = row(-40, 3, 0.5f, 0);
  a[2] = row(0, 1, 0.5f, 0);  // x3, not jumped
  b[2] = row(0, 3, 1.5f, 0);
  a[3] = row(0, 0, 0, 0);  // from 0: +Inf, jumped
  b[3] = row(0, 1e-3f, 1e-4f, 0);
  a[4] = row(-1, 1, 0, 0);  // nothing finite left: growth undefined, last, jumped
  b[4] = row(kNaN, kNaN, kNaN, 8);
  a[5] = row(-1, 1, 0, 0);  // the same |max|, but NaNs appeared: jumped
  b[5] = row(-1, 1, 0, 2);
  b[6] = row(-1, 1, 0, 0);  // measured at b only: not in the table
  const StepComparison c = compare_steps(*SlotTable::builtin(), 3, 10, a, 11, b);
  EXPECT_EQ(c.fold, 3);
  EXPECT_EQ(c.step_a, 10);
  EXPECT_EQ(c.step_b, 11);
  ASSERT_EQ(c.rows.size(), 5u);
  std::vector<int> order;
  for (const SlotChange& r : c.rows) order.push_back(r.slot);
  // What broke first: the slots whose non-finite values are new, in dataflow order (4
  // value_logits before 5 adv_logits, whatever their growths), the other jumps by growth (3 from
  // 0, 1 x20), then the rest (2).
  EXPECT_EQ(order, (std::vector<int>{4, 5, 3, 1, 2}));
  EXPECT_TRUE(std::isinf(c.rows[2].growth));
  EXPECT_DOUBLE_EQ(c.rows[3].growth, 20.0);
  EXPECT_NEAR(c.rows[3].mean_change, 0.4, 1e-6);
  EXPECT_DOUBLE_EQ(c.rows[4].growth, 3.0);
  EXPECT_FALSE(c.rows[4].jumped);
  EXPECT_TRUE(c.rows[2].jumped && c.rows[3].jumped);
  EXPECT_TRUE(c.rows[1].went_nonfinite && c.rows[1].jumped);
  EXPECT_DOUBLE_EQ(c.rows[1].growth, 1.0);
  EXPECT_TRUE(std::isnan(c.rows[0].growth));
  EXPECT_TRUE(c.rows[0].went_nonfinite && c.rows[0].jumped);
  const std::string text = comparison_text(*SlotTable::builtin(), c);
  EXPECT_NE(text.find("fold 3: step 10 vs step 11"), std::string::npos) << text;
  EXPECT_NE(text.find("*  1 h_s1"), std::string::npos) << text;
  EXPECT_NE(text.find("   2 h_s2"), std::string::npos) << text;
}

// lr-explosion: the learning rate blows the weights up at step 0; at step 1 the trunk's
// activations grow by many decades while the heads go non-finite. Compare names the slots that
// went non-finite first, then the trunk that grew.
TEST(StepCompare, OnLrExplosionWhatWentNonFiniteThenTheTrunkThatGrewHeadTheTable) {
  const Config c = test::scenario_config("lr-explosion", 3);
  Session s(c, make_cpu_backend(c));
  s.run();
  const auto& h = s.history();
  std::vector<bool> fired;
  for (const StepRecord& r : h) fired.push_back(any_fired(r.flags));
  const auto pair = pair_of(fired, std::nullopt);
  ASSERT_TRUE(pair.has_value());
  ASSERT_EQ(*pair, std::make_pair(0, 1));
  const StepComparison cmp =
      compare_steps(*SlotTable::builtin(), 0, 0, h[0].health, 1, h[1].health);
  ASSERT_GE(cmp.rows.size(), 30u);
  std::size_t grown = 0;  // the first row that did not go non-finite
  while (grown < cmp.rows.size() && cmp.rows[grown].went_nonfinite) ++grown;
  ASSERT_GT(grown, 0u);
  for (std::size_t i = grown; i < cmp.rows.size(); ++i) EXPECT_FALSE(cmp.rows[i].went_nonfinite);
  ASSERT_LT(grown, cmp.rows.size());
  EXPECT_EQ(cmp.rows[grown].slot, 2);  // h_s2
  EXPECT_GT(cmp.rows[grown].growth, 1e20);
  EXPECT_TRUE(cmp.rows[grown].jumped);
  // Every slot that fired at step 1 is marked, whatever its growth.
  for (const SlotChange& r : cmp.rows)
    if (h[1].flags[static_cast<std::size_t>(r.slot)]) {
      EXPECT_TRUE(r.jumped) << r.slot;
    }
}

TEST(StepCompare, JumpedStartsAtTenfoldGrowthAndTheTableSaysSo) {
  // docs/slots.md: jumped is "grew 10x or more". Just under (9.99x) is not, exactly 10x is.
  SlotHealthRows a = unmeasured_rows(kBuiltinSlotCount), b = unmeasured_rows(kBuiltinSlotCount);
  a[1] = row(0, 1, 0.5f, 0);
  b[1] = row(0, 9.99f, 0.5f, 0);
  a[2] = row(0, 1, 0.5f, 0);
  b[2] = row(0, 10.0f, 0.5f, 0);
  const StepComparison c = compare_steps(*SlotTable::builtin(), 0, 4, a, 5, b);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].slot, 2);
  EXPECT_DOUBLE_EQ(c.rows[0].growth, 10.0);
  EXPECT_TRUE(c.rows[0].jumped);
  EXPECT_EQ(c.rows[1].slot, 1);
  EXPECT_NEAR(c.rows[1].growth, 9.99, 1e-6);
  EXPECT_FALSE(c.rows[1].jumped);
  const std::string text = comparison_text(*SlotTable::builtin(), c);
  EXPECT_NE(text.find("* jumped: |max| x10 or more"), std::string::npos) << text;
  EXPECT_NE(text.find("*  2 h_s2"), std::string::npos) << text;
  EXPECT_NE(text.find("   1 h_s1"), std::string::npos) << text;
}

namespace nanscope {
namespace {

TEST(StepCompare, ElementwiseNamesTheLargestChangesAndTheFirstDifference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {1.0f, 2.0f, 0.0f, 4.0f, 5.0f, -0.0f};
  const std::vector<float> b = {1.0f, 2.5f, 3.0f, 1.0f, nan, 0.0f};
  const ElementwiseChange c = compare_elementwise(a, b);
  EXPECT_EQ(c.count, 6u);
  EXPECT_EQ(c.differing, 5);  // -0 and +0 differ in their bits
  EXPECT_EQ(c.first_index, 1);
  EXPECT_EQ(c.max_abs, 3.0);  // 0 -> 3 and 4 -> 1 both change by 3: the first is named
  EXPECT_EQ(c.max_abs_index, 2);
  EXPECT_DOUBLE_EQ(c.max_rel, 0.75);  // 4 -> 1 (from 0 has no relative change)
  EXPECT_EQ(c.max_rel_index, 3);
  EXPECT_EQ(c.finiteness_changed, 1);
  EXPECT_EQ(compare_elementwise(a, a).differing, 0);
  EXPECT_NE(elementwise_text(c).find("5 of 6 elements differ"), std::string::npos);
  EXPECT_THROW(compare_elementwise(a, {1.0f}), UsageError);
}

}  // namespace
}  // namespace nanscope
