// Sentinel semantics on the CPU backend: localisation by injection, sticky flags and the fold
// reset, slot states, the guard, breakpoints, halts, and checks that only read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/config_io.h"
#include "core/errors.h"
#include "model/check_bank.h"
#include "session/session.h"
#include "session_checks.h"

using namespace nanscope;

namespace {

Config small(const std::vector<std::string>& sets = {}) {
  return test::sentinel_config(sets);
}

std::unique_ptr<Session> run_with(const Config& c, std::vector<std::string> injections,
                                  std::set<int> breaks = {}) {
  SessionOptions o;
  for (const auto& i : injections) o.injections.push_back(parse_injection(i));
  o.breakpoints = std::move(breaks);
  auto s = std::make_unique<Session>(c, make_cpu_backend(c), o);
  s->run();
  return s;
}

}  // namespace

TEST(Localisation, AuxParameterFault_34FiresWith33Clean) {
  auto s = run_with(small(), {"param:aux.w2@0:2"});
  auto e = s->entry();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->slot, kAuxPredNb);
  EXPECT_EQ(e->step, 2);
  auto b = s->backward_entry();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->slot, kBwDHS2Aux);
  EXPECT_EQ(b->step, 2);
  const auto& flags = s->history()[2].flags;
  EXPECT_EQ(flags[kBwDHS2Main], 0);
  EXPECT_NE(flags[kBwDHS2Aux], 0);
  EXPECT_NE(flags[kAuxDHS2Nb], 0);
}

TEST(Localisation, IqnOutputFault_35FiresWith33And34Clean) {
  auto s = run_with(small(), {"param:iqn.out.w@0:2:posinf"});
  ASSERT_TRUE(s->entry());
  EXPECT_EQ(s->entry()->slot, kIqnQuantiles);
  ASSERT_TRUE(s->backward_entry());
  EXPECT_EQ(s->backward_entry()->slot, kBwDHS2Iqn);
  const auto& flags = s->history()[2].flags;
  EXPECT_EQ(flags[kBwDHS2Main], 0);
  EXPECT_EQ(flags[kBwDHS2Aux], 0);
  EXPECT_NE(flags[kBwDHS2Iqn], 0);
  EXPECT_NE(flags[kIqnQuantiles] & kKindPosInf, 0);  // +Inf weights give +Inf quantiles
}

TEST(Localisation, BnDConcatFault_33Fires) {
  auto s = run_with(small(), {"slot:bn_d_concat@0:3"});
  ASSERT_TRUE(s->entry());
  EXPECT_EQ(s->entry()->slot, kBnDConcat);
  EXPECT_EQ(s->entry()->step, 3);
  ASSERT_TRUE(s->backward_entry());
  EXPECT_EQ(s->backward_entry()->slot, kBwDHS2Main);
  // bn_d_concat fired once, by its own fire-once-at-end check.
  EXPECT_EQ(s->folds()[0].flags.slots[kBnDConcat].count, 1);
}

TEST(Flags, StickyWithinAFoldAndResetAtTheBoundary) {
  // A transient fault in the aux loss buffer: it reaches the total loss but not the gradients.
  auto s = run_with(small(), {"slot:aux_loss@0:1:neginf"});
  const FoldFlags& f0 = s->folds()[0].flags;
  EXPECT_EQ(f0.slots[kAuxLoss].state, SlotState::Fired);
  EXPECT_EQ(f0.slots[kAuxLoss].kinds, kKindNegInf);
  EXPECT_EQ(f0.slots[kAuxLoss].first_step, 1);
  EXPECT_EQ(f0.slots[kAuxLoss].count, 1);
  EXPECT_EQ(f0.slots[kTotalLoss].state, SlotState::Fired);  // sticky: still fired at fold end
  EXPECT_EQ(f0.slots[kParams].state, SlotState::Clean);
  for (int st = 0; st < 6; ++st)  // the history holds each step's own flags
    EXPECT_EQ(s->history()[st].flags[kAuxLoss], st == 1 ? kKindNegInf : 0) << st;
  const FoldFlags& f1 = s->folds()[1].flags;
  EXPECT_FALSE(f1.any_fired());
  EXPECT_EQ(f1.slots[kAuxLoss].state, SlotState::Clean);
  EXPECT_EQ(f1.slots[kAuxLoss].first_step, -1);
  // Execution position: aux_loss is checked before total_loss at that step.
  EXPECT_LT(f0.slots[kAuxLoss].exec_position, f0.slots[kTotalLoss].exec_position);
}

TEST(States, AbsentSlotsWithoutIqnAreNeverClean) {
  auto s = run_with(small({"loss.lambda_iqn=0"}), {"param:aux.w2@0:1"});
  for (int slot : {12, 13, 14, 15, 16, 26, 27, 28, 35, 36})
    for (const auto& f : s->folds())
      EXPECT_EQ(f.flags.slots[slot].state, SlotState::Absent) << slot;
  EXPECT_THROW(run_with(small({"loss.lambda_iqn=0"}), {"slot:iqn_quantiles@0:1"}), UsageError);
}

TEST(States, Slot31DeferredUntilUndeferred) {
  auto deferred = run_with(small(), {"slot:ensemble_d_logits@0:1"});
  EXPECT_EQ(deferred->folds()[0].flags.slots[kEnsembleDLogits].state, SlotState::Deferred);
  EXPECT_FALSE(deferred->folds()[0].flags.slots[kEnsembleDLogits].kinds);
  auto undeferred = run_with(small({"sentinel.undefer=[31]"}), {"slot:ensemble_d_logits@0:1"});
  EXPECT_EQ(undeferred->folds()[0].flags.slots[kEnsembleDLogits].state, SlotState::Fired);
  EXPECT_EQ(undeferred->folds()[0].flags.slots[kEnsembleDLogits].first_step, 1);
  EXPECT_THROW(small({"sentinel.undefer=[5]"}), ConfigError);
}

TEST(States, DisabledSlotIsNotChecked) {
  auto s = run_with(small({"sentinel.disabled=[18]"}), {"slot:aux_loss@0:1"});
  EXPECT_EQ(s->folds()[0].flags.slots[kAuxLoss].state, SlotState::Disabled);
  EXPECT_EQ(s->folds()[0].flags.slots[kTotalLoss].state,
            SlotState::Fired);  // the NaN still travels
  EXPECT_EQ(s->entry()->slot, kTotalLoss);
}

TEST(Guard, SkippedUpdateLeavesParametersAndAdamBitIdentical) {
  test::expect_guard_skips_bit_exact([](const Config& c) { return make_cpu_backend(c); });
}

TEST(Breakpoints, StopAtTheFirstStepWhereTheSlotFiresWhateverFiredBefore) {
  auto s = run_with(small({"halt.on_fire=\"step\""}),
                    {"slot:aux_loss@0:1", "slot:aux_dh_s2_nb@1:2"}, {kAuxDHS2Nb});
  ASSERT_TRUE(s->halt());
  EXPECT_EQ(s->halt()->kind, EventKind::Breakpoint);
  EXPECT_EQ(s->halt()->fold, 1);
  EXPECT_EQ(s->halt()->step, 2);
  EXPECT_EQ(s->global_step(), 6 + 3);
}

TEST(Halts, OnFirePolicies) {
  auto at_step = run_with(small({"halt.on_fire=\"step\""}), {"slot:aux_loss@0:2"});
  ASSERT_TRUE(at_step->halt());
  EXPECT_EQ(at_step->halt()->kind, EventKind::HaltNan);
  EXPECT_EQ(at_step->halt()->step, 2);
  EXPECT_EQ(at_step->history().size(), 3u);
  auto fold_end = run_with(small({"halt.on_fire=\"fold_end\""}), {"slot:aux_loss@0:2"});
  ASSERT_TRUE(fold_end->halt());
  EXPECT_EQ(fold_end->halt()->step, 5);
  EXPECT_EQ(fold_end->history().size(), 6u);
  EXPECT_EQ(fold_end->halt()->entry_slot, kAuxLoss);
  auto never = run_with(small({"halt.on_fire=\"never\""}), {"slot:aux_loss@0:2"});
  EXPECT_FALSE(never->halt());
  EXPECT_EQ(never->history().size(), 12u);
}

TEST(Injection, SpecGrammarAndValidation) {
  Injection a = parse_injection("slot:33@1:7:neginf:all");
  EXPECT_EQ(a.slot, 33);
  EXPECT_EQ(a.fold, 1);
  EXPECT_EQ(a.step, 7);
  EXPECT_EQ(a.kind, kKindNegInf);
  EXPECT_FALSE(a.element);
  Injection b = parse_injection("param:encoder.w1@0:3");
  EXPECT_EQ(b.param, "encoder.w1");
  EXPECT_EQ(b.kind, kKindNaN);
  EXPECT_EQ(*b.element, 0u);
  Injection c = parse_injection("slot:bw_d_h_s2.aux@0:1:posinf:12");
  EXPECT_EQ(c.slot, 34);
  EXPECT_EQ(*c.element, 12u);
  for (const char* bad : {"slot:nope@0:1", "slot:3", "param:x@a:1", "slot:3@0:1:zero",
                          "slot:3@0:1:nan:x", "batch@0:1"})
    EXPECT_THROW(parse_injection(bad), UsageError) << bad;
  EXPECT_THROW(run_with(small(), {"param:encoder.w9@0:1"}), UsageError);
  EXPECT_THROW(run_with(small(), {"slot:total_loss@0:1:nan:1"}), UsageError);  // 1 element
  EXPECT_THROW(run_with(small(), {"slot:batch@5:1"}), UsageError);             // fold 5 of 2
}

TEST(Checks, NeverChangeTheBuffersTheyRead) {
  // Every slot's check, through the backend's bank, on the buffers of a step in which a check
  // fired: before and after it, every slot buffer is compared byte for byte.
  Config c = small();
  SessionOptions o;
  o.injections.push_back(parse_injection("slot:h_s1@0:1:nan:all"));  // a fired check too
  Session s(c, make_cpu_backend(c), o);
  s.step();
  s.step();
  ASSERT_TRUE(s.history().back().flags[kHS1]);
  auto all = [&] {
    std::vector<std::vector<char>> out;
    for (int i = 0; i < kBuiltinSlotCount; ++i) {
      SlotView v = s.backend().slot(i);
      const char* p = static_cast<const char*>(v.data);
      out.emplace_back(p, p + (v.data ? v.count * sizeof(float) : 0));
    }
    return out;
  };
  CheckBank& checks = s.backend().checks();
  checks.begin_step(StepKey{c.run.seed, 0, 2, 2});
  for (int slot = 0; slot < kBuiltinSlotCount; ++slot) {
    const auto before = all();
    checks.check_now(slot);
    EXPECT_EQ(before, all()) << "check of slot " << slot << " changed a buffer";
  }
  const std::vector<StepOutcome> out = checks.end_step();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].kinds[kHS1] & kKindNaN);  // the checks saw the NaN they left alone
}
