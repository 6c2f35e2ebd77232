// A step's outcome says whether its update ran, as the guard decided before it ran: a fire in what
// the update leaves (adam_moments, params) does not turn an update that ran into a skipped one,
// with the guard on or off; a fire before the update is skipped with the guard on only.
#include <gtest/gtest.h>

#include "core/slot_table.h"
#include "model/backend.h"
#include "session/injection.h"
#include "session/session.h"
#include "test_support.h"

namespace nanscope {
namespace {

std::vector<StepRecord> run_with(bool guard, const std::string& injection) {
  Config c = test::tiny_config(Precision::Float32);
  c.run.folds = 1;
  c.halt.on_fire = HaltOnFire::Never;
  c.guard.enabled = guard;
  SessionOptions o;
  o.injections.push_back(parse_injection(injection));
  Session s(c, make_cpu_backend(c), o);
  s.run();
  return s.history();
}

class Updated : public ::testing::TestWithParam<bool> {};

TEST_P(Updated, AFireInWhatTheUpdateLeavesKeepsTheUpdate) {
  const bool guard = GetParam();
  for (const char* slot : {"params", "adam_moments"}) {
    const auto h = run_with(guard, std::string("slot:") + slot + "@0:2");
    ASSERT_EQ(h.size(), 4u);
    const int index = *SlotTable::builtin()->find(slot);
    EXPECT_NE(h[2].flags[static_cast<std::size_t>(index)], 0) << slot;
    EXPECT_TRUE(h[1].updated) << slot;
    EXPECT_TRUE(h[2].updated) << slot << ": the update ran before its outputs fired";
  }
}

TEST_P(Updated, AFireBeforeTheUpdateSkipsItOnlyWithTheGuard) {
  const bool guard = GetParam();
  const auto h = run_with(guard, "slot:h_s2@0:2");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_NE(h[2].flags[kHS2], 0);
  EXPECT_EQ(h[2].updated, !guard);
  EXPECT_TRUE(h[1].updated);
  EXPECT_TRUE(h[3].updated);  // a transient fault: the next step is clean and updates
}

INSTANTIATE_TEST_SUITE_P(Guard, Updated, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "On" : "Off"; });

}  // namespace
}  // namespace nanscope
