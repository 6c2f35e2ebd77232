// The contract's scenario truth table on the CPU backend (default config otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/config_io.h"
#include "session/scenarios.h"
#include "session/session.h"
#include "session_checks.h"

using namespace nanscope;

namespace {

struct Expect {
  const char* scenario;
  int entry;         // -1: none; -2: any
  int backward;      // -1: none; -2: any (33, 34 or 35)
  const char* halt;  // nullptr: finishes normally
  int steps = 8;
};

using test::scenario_config;

class TruthTable : public ::testing::TestWithParam<Expect> {};

}  // namespace

TEST_P(TruthTable, EntryBackwardEntryAndHalt) {
  const Expect& x = GetParam();
  Config c = scenario_config(x.scenario, x.steps);
  Session s(c, make_cpu_backend(c));
  s.run();
  auto entry = s.entry();
  auto bw = s.backward_entry();
  if (x.entry == -1) {
    EXPECT_FALSE(entry) << "entry " << builtin_slot(entry->slot).name;
  } else {
    ASSERT_TRUE(entry);
  }
  if (x.entry >= 0) {
    EXPECT_EQ(entry->slot, x.entry) << builtin_slot(entry->slot).name;
  }
  if (x.backward == -1) {
    EXPECT_FALSE(bw);
  } else {
    ASSERT_TRUE(bw);
  }
  if (x.backward >= 0) {
    EXPECT_EQ(bw->slot, x.backward);
    // The stages before it were clean at the firing step.
    const auto& flags = s.history()[static_cast<std::size_t>(bw->step)].flags;
    for (int earlier = kBwDHS2Main; earlier < x.backward; ++earlier)
      EXPECT_EQ(flags[earlier], 0) << earlier;
  }
  if (x.halt) {
    ASSERT_TRUE(s.halt());
    EXPECT_EQ(name_of(s.halt()->kind),
              x.halt);  // the truth table spells kinds as the contract does
    EXPECT_EQ(s.halt()->fold, 0);
  } else {
    EXPECT_FALSE(s.halt());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, TruthTable,
    ::testing::Values(Expect{"healthy", -1, -1, nullptr},
                      Expect{"corrupt-bar", kBatch, -2, "halt_nan"},
                      Expect{"log-zero", kC51Loss, -1, "halt_nan"},
                      Expect{"aux-blowup", kAuxPredNb, kBwDHS2Aux, "halt_nan"},
                      Expect{"iqn-blowup", kIqnQuantiles, kBwDHS2Iqn, "halt_nan"},
                      Expect{"lr-explosion", -2, -2, "halt_nan"},
                      Expect{"grad-collapse", -1, -1, "halt_grad_collapse", 60}),
    [](const auto& info) {
      std::string n = info.param.scenario;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

TEST(Scenarios, GradCollapseHaltsWithoutAnyFire) {
  Config c = scenario_config("grad-collapse", 60);
  Session s(c, make_cpu_backend(c));
  // Step by step, so that the encoder group's norm is read at every step, not the last one again.
  while (!s.halt() && static_cast<int>(s.history().size()) < c.run.steps_per_fold) {
    s.step();
    EXPECT_EQ(s.backend().slot(kGradNorm).at(1), 0.0)  // the encoder group's norm
        << "step " << s.history().size() - 1;
  }
  ASSERT_TRUE(s.halt());
  EXPECT_EQ(s.halt()->kind, EventKind::HaltGradCollapse);
  EXPECT_EQ(s.halt()->step, c.halt.collapse_patience - 1);
  EXPECT_EQ(static_cast<int>(s.history().size()), c.halt.collapse_patience);
  for (const auto& r : s.history()) {
    EXPECT_EQ(r.flags, StepFlags(kBuiltinSlotCount));
    EXPECT_TRUE(std::isfinite(r.losses.total));
  }
}

TEST(Scenarios, EveryPresetIsListedAndParses) {
  std::vector<std::string> names;
  for (const auto& sc : scenarios()) {
    names.push_back(sc.name);
    ConfigBuilder b;
    b.load_text(sc.toml, sc.name);
    EXPECT_NO_THROW(b.build()) << sc.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"healthy", "corrupt-bar", "log-zero", "aux-blowup",
                                             "iqn-blowup", "lr-explosion", "grad-collapse"}));
}

TEST(SlotDocs, TheTableInDocsIsTheCodesTable) {
  std::ifstream in(std::string(NANSCOPE_SOURCE_DIR) + "/docs/slots.md");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& s : (*SlotTable::builtin()))
    EXPECT_NE(ss.str().find(slot_markdown_row(s) + "\n"), std::string::npos)
        << s.index << " " << s.name;
  // Ranks are a permutation: every buffer has its own place in the dataflow.
  std::vector<int> ranks;
  for (const auto& s : (*SlotTable::builtin())) ranks.push_back(s.rank);
  std::sort(ranks.begin(), ranks.end());
  for (int i = 0; i < kBuiltinSlotCount; ++i) EXPECT_EQ(ranks[i], i);
}
