// Time travel's promise, shared by the CPU test and the GPU test (the same check on the CUDA
// backend, graphed and not): any (fold, step, slot) recomputed from a checkpoint equals, bit for
// bit, that slot's buffer in a fresh run halted after that step, as its check saw it (slots 33-35
// are one buffer at three moments of the step); and at the entry step every slot the first-fire
// dump holds (the check bank's own capture) equals the dump's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "io/run_file.h"
#include "session/materialize.h"
#include "session_checks.h"

namespace nanscope::test {

// Three folds with a slot injection that fires (fold 1, step 6) and a parameter injection, the
// guard on so that a fold goes on learning after its fire, and checkpoints every 4 steps.
inline Config time_travel_config() {
  Config c =
      sentinel_config({"guard.enabled=true", "history.checkpoint_every=4",
                       "history.in_run_file=true", "run.steps_per_fold=11", "optim.target_sync=3"});
  c.run.folds = 3;
  c.inject.faults = {"slot:h_s2@1:6:nan:3", "param:value.b@2:9:posinf:0"};
  return c;
}

struct Triple {
  int fold, step, slot;
  bool operator<(const Triple& o) const {
    return std::tie(fold, step, slot) < std::tie(o.fold, o.step, o.slot);
  }
};

// At least 30 triples: per fold its first and last steps, the entry step and the step before it,
// and random ones, each with a random existing slot (and the entry slot at the entry step).
inline std::vector<Triple> time_travel_triples(const Config& c, const std::vector<int>& existing,
                                               int entry_fold, int entry_step, int entry_slot) {
  std::mt19937 rng(20261205);
  auto any_slot = [&] { return existing[rng() % existing.size()]; };
  std::set<Triple> t;
  for (int f = 0; f < c.run.folds; ++f) {
    t.insert({f, 0, any_slot()});
    t.insert({f, c.run.steps_per_fold - 1, any_slot()});
  }
  t.insert({entry_fold, entry_step, entry_slot});
  t.insert({entry_fold, entry_step - 1, entry_slot});
  t.insert({entry_fold, entry_step, any_slot()});
  while (t.size() < 34)
    t.insert({static_cast<int>(rng() % c.run.folds), static_cast<int>(rng() % c.run.steps_per_fold),
              any_slot()});
  return {t.begin(), t.end()};
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline std::vector<float> floats(const SlotView& v) {
  std::vector<float> out(v.count);
  for (std::size_t i = 0; i < v.count; ++i) out[i] = static_cast<float>(v.at(i));
  return out;
}

// The whole run of `c`, recording into `dir` (its run file holds the checkpoints).
inline std::unique_ptr<Session> recorded_run(const Config& c, const BackendFactory& make,
                                             bool graph, const std::string& dir) {
  SessionOptions o;
  o.out_dir = dir;
  o.graph = graph;
  auto run = std::make_unique<Session>(c, make(c), o);
  run->run();
  return run;
}

// The run (recording, with its checkpoints in the run file), then each triple: recomputed from
// the run file's checkpoint and from the live ring, against a fresh run halted after that step.
inline void expect_time_travel_bit_exact(const BackendFactory& make, bool graph,
                                         const std::string& name) {
  const Config c = time_travel_config();
  const auto dir = temp_dir("time_travel_" + name);
  const std::unique_ptr<Session> recorded = recorded_run(c, make, graph, dir.string());
  Session& run = *recorded;
  ASSERT_TRUE(run.entry());
  const int entry_fold = run.entry()->fold, entry_step = run.entry()->step;
  EXPECT_EQ(entry_fold, 1);
  EXPECT_EQ(entry_step, 6);
  std::vector<int> existing;
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    if (run.backend().slot(s).exists()) existing.push_back(s);
  const RunFileData file = read_run_file(run.run_file_path());
  ASSERT_EQ(file.checkpoints.size(), run.checkpoints().size());
  ASSERT_EQ(file.checkpoints.size(), 9u);  // steps 0, 4, 8 of 3 folds

  Materializer m(c, make, graph);
  int compared = 0;
  for (const Triple& t :
       time_travel_triples(c, existing, entry_fold, entry_step, run.entry()->slot)) {
    SCOPED_TRACE(::testing::Message() << name << ": fold " << t.fold << " step " << t.step
                                      << " slot " << builtin_slot(t.slot).name);
    // The checkpoint from the file, and the same one from the live ring: the same state.
    std::size_t row = 0;
    for (std::size_t i = 0; i < file.checkpoints.size(); ++i)
      if (file.checkpoints[i].fold == t.fold && file.checkpoints[i].step <= t.step) row = i;
    const Checkpoint from_file = read_run_checkpoint(run.run_file_path(), row);
    const Checkpoint from_ring = run.read_checkpoint(*run.checkpoint_at_or_before(t.fold, t.step));
    ASSERT_EQ(from_file.step, from_ring.step);
    EXPECT_EQ(from_file.state.params, from_ring.state.params);
    EXPECT_EQ(from_file.state.adam_v, from_ring.state.adam_v);
    EXPECT_EQ(from_file.state.adam_t, from_ring.state.adam_t);

    const auto got = m.materialize(from_file, MaterializeRequest{t.fold, t.step, {t.slot}});
    ASSERT_TRUE(got);
    ASSERT_EQ(got->slots.size(), 1u);
    EXPECT_EQ(got->steps_run, t.step - from_file.step + 1);

    Session fresh(c, make(c), SessionOptions{{}, {}, "", graph, ""});
    const std::int64_t before = static_cast<std::int64_t>(t.fold) * c.run.steps_per_fold + t.step;
    if (before > 0) fresh.run(RunUntil{RunUntil::Kind::Steps, before, -1});
    std::vector<float> want;
    fresh.set_check_hook([&](int s) {
      if (s == t.slot && want.empty()) want = floats(fresh.backend().slot(s));
    });
    fresh.set_graph(false);  // the check sites are called in a step run phase by phase
    fresh.run(RunUntil{RunUntil::Kind::Steps, 1, -1});
    if (want.empty()) want = floats(fresh.backend().slot(t.slot));  // not checked at that step
    EXPECT_TRUE(same_bits(got->slots[0].values, want));
    // The recomputed steps' records equal the run's (flags and health, bit for bit).
    const RunAgreement a = agreement_with_run(*got, file, dir.string());
    EXPECT_EQ(a.steps_compared, got->steps_run);
    EXPECT_TRUE(a.health_bit_equal);
    EXPECT_EQ(got->records.back().flags, fresh.history().back().flags);
    ++compared;
  }
  EXPECT_GE(compared, 30);
  // The entry step, every slot, against its first-fire dump.
  const auto entry =
      m.materialize(read_run_checkpoint(run.run_file_path(), entry_fold * 3 + entry_step / 4),
                    MaterializeRequest{entry_fold, entry_step, {}});
  ASSERT_TRUE(entry);
  const RunAgreement a = agreement_with_run(*entry, file, dir.string());
  EXPECT_FALSE(a.dump.empty());
  EXPECT_GE(a.dump_slots, 1);
  EXPECT_TRUE(a.dump_bit_equal) << "largest difference " << a.dump_max_abs;
  std::filesystem::remove_all(dir);
}

// The states a recomputation keeps near its cell (Materializer's `keep`): each is the run's state
// before its step, so a cell recomputed from one equals, bit for bit, the same cell recomputed from
// the run's checkpoint. Fold 1 around the entry (step 6, from the checkpoint at 4) and the fold's
// last step (from 8).
inline void expect_kept_states_exact(const BackendFactory& make, bool graph,
                                     const std::string& name) {
  const Config c = time_travel_config();
  const auto dir = temp_dir("kept_states_" + name);
  const std::string path = recorded_run(c, make, graph, dir.string())->run_file_path();
  const RunFileData file = read_run_file(path);
  Materializer m(c, make, graph);
  for (int step : {7, 10}) {
    const Checkpoint from = file_checkpoint_for(file, path, 1, step);
    std::vector<Checkpoint> kept;
    const auto got = m.materialize(from, MaterializeRequest{1, step, {kHS2}}, {}, {},
                                   [&](Checkpoint&& k) { kept.push_back(std::move(k)); });
    ASSERT_TRUE(got);
    // The states before from.step + 1 ... step, and after the step where the fold has one.
    std::vector<int> steps;
    for (const Checkpoint& k : kept) steps.push_back(k.step);
    std::vector<int> want_steps;
    for (int s = from.step + 1; s <= std::min(step + 1, c.run.steps_per_fold - 1); ++s)
      want_steps.push_back(s);
    EXPECT_EQ(steps, want_steps) << name << ": recomputing step " << step;
    for (const Checkpoint& k : kept) {
      SCOPED_TRACE(::testing::Message() << name << ": the state kept before step " << k.step);
      EXPECT_EQ(k.fold, 1);
      EXPECT_EQ(k.global_step, from.global_step + (k.step - from.step));
      const auto near = m.materialize(k, MaterializeRequest{1, k.step, {kHS2, kParams}});
      const auto far = m.materialize(from, MaterializeRequest{1, k.step, {kHS2, kParams}});
      ASSERT_TRUE(near && far);
      EXPECT_EQ(near->steps_run, 1);
      ASSERT_EQ(near->slots.size(), far->slots.size());
      for (std::size_t i = 0; i < near->slots.size(); ++i)
        EXPECT_TRUE(same_bits(near->slots[i].values, far->slots[i].values))
            << "slot " << near->slots[i].index;
      EXPECT_EQ(near->context.state.params, far->context.state.params);
      EXPECT_EQ(near->context.state.adam_t, far->context.state.adam_t);
    }
  }
}

}  // namespace nanscope::test
