// Watch conditions (docs/slots.md, "Watches"): each trips on a real mechanism before anything
// fires, stays quiet on the healthy run, halts only with halt.on_watch, and reaches the run file
// and the JSON summary as documented.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <set>

#include "core/config_io.h"
#include "io/run_file.h"
#include "session_checks.h"
#include "test_support.h"

using namespace nanscope;

namespace {

using test::with;

// The aux head's learning rate 100 times the default: at step 1 its gradient norm jumps from 0.26
// to 52 (the encoder's to 89) and nothing fires in the fold (the aux-blowup scenario's 1e25 fires
// at step 1).
Config aux_lr_too_high(int steps) {
  return with(test::scenario_config("healthy", steps),
              {"optim.lr_mult.aux=100", "watch.grad_explode=5"});
}

constexpr int kAux = 6, kEncoder = 0;  // indices in kParamGroups

}  // namespace

TEST(Watch, GradExplodeTripsOnTheAuxGroupBeforeAnythingFires) {
  const Config c = aux_lr_too_high(20);
  Session s(c, make_cpu_backend(c));
  EXPECT_EQ(s.run(), StopReason::Finished);
  EXPECT_FALSE(s.entry());  // nothing fired
  // At step 1 the aux group's norm and the encoder's (the aux gradient flows into the trunk) cross
  // the threshold; each trips once in the fold, though they stay high.
  ASSERT_EQ(s.watch_trips().size(), 2u);
  std::set<int> groups;
  for (const WatchTrip& t : s.watch_trips()) {
    EXPECT_EQ(t.condition, WatchCondition::GradExplode);
    EXPECT_EQ(t.slot, kGradNorm);
    EXPECT_EQ(t.step, 1);
    EXPECT_EQ(t.threshold, 5.0);
    EXPECT_GT(t.value, 5.0);
    EXPECT_EQ(t.value, s.history()[1].losses.group_norm[static_cast<std::size_t>(t.group)]);
    groups.insert(t.group);
  }
  EXPECT_EQ(groups, (std::set<int>{kEncoder, kAux}));
  const auto watch_events = std::count_if(s.events().begin(), s.events().end(), [](const Event& e) {
    return e.kind == EventKind::Watch;
  });
  EXPECT_EQ(watch_events, 2);
  EXPECT_FALSE(s.halt());
}

TEST(Watch, GradVanishTripsOnTheDeadEncoder) {
  // grad-collapse: every encoder relu dead, its gradient exactly zero from step 0.
  const Config c = with(test::scenario_config("grad-collapse", 10),
                        {"watch.grad_vanish=1e-6", "halt.collapse_patience=0"});
  Session s(c, make_cpu_backend(c));
  s.run();
  ASSERT_FALSE(s.watch_trips().empty());
  const WatchTrip& t = s.watch_trips()[0];
  EXPECT_EQ(t.condition, WatchCondition::GradVanish);
  EXPECT_EQ(t.group, kEncoder);
  EXPECT_EQ(t.step, 0);
  EXPECT_EQ(t.value, 0.0);
  for (const WatchTrip& w : s.watch_trips()) EXPECT_EQ(w.group, kEncoder);  // only the dead one
}

TEST(Watch, QuietOnTheHealthyRun) {
  const Config c = with(test::scenario_config("healthy", 40),
                        {"watch.grad_explode=5", "watch.grad_vanish=1e-6"});
  Session s(c, make_cpu_backend(c));
  s.run();
  EXPECT_TRUE(s.watch_trips().empty());
  EXPECT_FALSE(s.halt());
}

TEST(Watch, HaltsOnlyWithHaltOnWatch) {
  const Config c = with(aux_lr_too_high(20), {"halt.on_watch=true"});
  Session s(c, make_cpu_backend(c));
  EXPECT_EQ(s.run(), StopReason::Halted);
  ASSERT_TRUE(s.halt());
  EXPECT_EQ(s.halt()->kind, EventKind::HaltWatch);
  EXPECT_EQ(s.halt()->step, 1);
  EXPECT_EQ(s.history().size(), 2u);  // it stopped right after the step
}

TEST(Watch, TheRunFileAndTheJsonSummaryHoldTheTrips) {
  const auto dir = test::temp_dir("watch_files");
  const std::string cmd = std::string(NANSCOPE_RUN_BINARY) +
                          " --backend cpu --folds 1 --steps-per-fold 4 --set optim.lr_mult.aux=100"
                          " --set watch.grad_explode=5 --quiet --json --force --out " +
                          (dir / "run").string();
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0);  // a watch is a warning: nothing fired, no halt
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["watches"].size(), 2u);  // the encoder's and the aux group's, in group order
  const auto& w = j["watches"][1];
  EXPECT_EQ(w["condition"], "grad_explode");
  EXPECT_EQ(w["slot"], kGradNorm);
  EXPECT_EQ(w["group"], kAux);
  EXPECT_EQ(w["fold"], 0);
  EXPECT_EQ(w["step"], 1);
  EXPECT_GT(w["value"].get<double>(), 5.0);
  EXPECT_EQ(w["threshold"].get<double>(), 5.0);
  const RunFileData r = read_run_file((dir / "run" / "run.h5").string());
  ASSERT_EQ(r.watches.size(), 2u);
  EXPECT_EQ(r.watches[1].condition, WatchCondition::GradExplode);
  EXPECT_EQ(r.watches[1].group, kAux);
  EXPECT_EQ(r.watches[1].value, w["value"].get<double>());
  const bool watch_event = std::any_of(r.events.begin(), r.events.end(), [](const RunEventRow& e) {
    return e.kind == EventKind::Watch && e.entry_slot == kGradNorm && e.step == 1;
  });
  EXPECT_TRUE(watch_event);
}
