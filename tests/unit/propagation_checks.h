// Where a NaN travels, and what a dump replays: checks shared by the CPU tests and the GPU tests
// (which run them on the CUDA backend, graphed and ungraphed).
//
// Propagation: for every slot that exists in the run, one NaN injected at step k must fire exactly
// the slot's documented closure at that step (the slot and everything downstream of it, following
// the consumers of the slot table, as docs/slots.md lists them). Replay: the dump of that step
// replays to the dumped buffers when the recorded injection is made again, and to a clean step
// with the verdict "transient" when it is not.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/sentinel.h"
#include "session/replay.h"
#include "session/session.h"
#include "session_checks.h"

namespace nanscope::test {

using MakeBackend = std::function<std::unique_ptr<Backend>(const Config&)>;

// The propagation run: the tiny network, one fold of k + 1 steps, every slot checked (31
// undeferred), no halt and no guard, so the step's fired set is the whole closure.
inline constexpr int kProbeStep = 2;
inline Config propagation_config(bool iqn) {
  Config c = sentinel_config({"sentinel.undefer=[31]", "run.folds=1",
                              "run.steps_per_fold=" + std::to_string(kProbeStep + 1)});
  if (!iqn) c.loss.lambda_iqn = 0;
  return c;
}

// nanscope's own 37 slots fit one 64-bit mask: the checks below compare masks.
inline std::vector<int> slots_of(std::uint64_t mask) {
  std::vector<int> out;
  for (int s = 0; s < 64; ++s)
    if (mask >> s & 1) out.push_back(s);
  return out;
}
inline std::uint64_t mask_of(const std::vector<int>& slots) {
  std::uint64_t m = 0;
  for (int s : slots) m |= std::uint64_t{1} << s;
  return m;
}
inline std::uint64_t downstream_closure(int slot, std::uint64_t present) {
  SlotSet p(kBuiltinSlotCount);
  for (int s : slots_of(present)) p.set(s);
  return mask_of(SlotTable::builtin()->downstream_closure(slot, p).members());
}

inline std::string slot_list(std::uint64_t mask) {
  std::string out;
  for (int s : slots_of(mask)) {
    if (!out.empty()) out += ' ';
    out += builtin_slot(s).name;
  }
  return out.empty() ? "(none)" : out;
}

// The slots present (and so checked: the propagation config checks them all) in a run.
inline std::uint64_t present_slots(const Config& c) {
  const SlotSetup setup = slot_setup(c);
  std::uint64_t m = 0;
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    if (setup.state[static_cast<std::size_t>(s)] != SlotState::Absent) m |= std::uint64_t{1} << s;
  return m;
}

// The element (flat index into a [B, H] buffer) of the first unit of the trunk that is active at
// the probe step: the encoder's relu backward passes a trunk gradient only where its unit is
// active (pre > 0, as in PyTorch), so a NaN put into a dead unit's gradient legitimately stops
// there. Read from a clean run of the same steps (h_s2 > 0 exactly where pre > 0).
inline std::size_t active_trunk_element(const Config& c, const MakeBackend& make) {
  Session s(c, make(c));
  for (int k = 0; k <= kProbeStep; ++k) s.step();
  const SlotView h = s.backend().slot(kHS2);
  for (std::size_t i = 0; i < h.count; ++i)
    if (h.at(i) > 0) return i;
  ADD_FAILURE() << "no active trunk unit at the probe step";
  return 0;
}

// The injections that put one NaN where every consumer of the slot reads. One element, except
// where the slot's consumers read different parts of it: the batch (s feeds the online network,
// s' the targets: one element of each), and the sub-action-indexed buffers whose consumers read
// only the taken (log_probs for the C51 loss, iqn_quantiles) or greedy (target_log_probs,
// iqn_target_quantiles) sub-action of a branch, which the test cannot know in advance: the first
// element of each sub-action of branch 0 in sample 0. The trunk-output gradients reach the encoder
// through its relu backward: their element is an active unit's (active_trunk_element).
inline std::vector<std::string> probe_injections(int slot, const Dims& d,
                                                 std::size_t trunk_element) {
  const std::string at =
      "slot:" + std::to_string(slot) + "@0:" + std::to_string(kProbeStep) + ":nan:";
  auto one = [&](std::size_t e) { return at + std::to_string(e); };
  switch (slot) {
    case kBatch:
      return {one(0), one(static_cast<std::size_t>(d.B) * d.F)};
    case kLogProbs:
    case kTargetLogProbs: {
      std::vector<std::string> v;
      for (int a = 0; a < d.sub[0]; ++a) v.push_back(one(static_cast<std::size_t>(a) * d.NA));
      return v;
    }
    case kIqnQuantiles:
    case kIqnTargetQuantiles: {
      std::vector<std::string> v;
      for (int a = 0; a < d.sub[0]; ++a) v.push_back(one(static_cast<std::size_t>(a)));
      return v;
    }
    case kIqnTrunkM:
    case kIqnDHS2:
    case kAuxDHS2Nb:
    case kBwDHS2Main:
    case kBwDHS2Aux:
    case kBwDHS2Iqn:
      return {one(trunk_element)};
    default:
      return {one(0)};
  }
}

// The slots that fired at the probe step of a run with these injections.
inline std::uint64_t fired_at_probe_step(const Config& c, const MakeBackend& make, bool graph,
                                         const std::vector<std::string>& injections,
                                         const std::string& out_dir = "") {
  SessionOptions o;
  o.graph = graph;
  o.out_dir = out_dir;
  for (const auto& spec : injections) o.injections.push_back(parse_injection(spec));
  Session s(c, make(c), o);
  s.run();
  std::uint64_t fired = 0;
  for (const StepRecord& r : s.history())
    for (int slot = 0; slot < kBuiltinSlotCount; ++slot)
      if (r.step == kProbeStep && r.flags[static_cast<std::size_t>(slot)])
        fired |= std::uint64_t{1} << slot;
  return fired;
}

// Every present slot's probe fires exactly its closure. Returns the fired set per slot (0 for an
// absent slot), for comparing backends.
inline std::vector<std::uint64_t> expect_probes_fire_their_closures(const Config& c,
                                                                    const MakeBackend& make,
                                                                    bool graph) {
  const std::uint64_t present = present_slots(c);
  const std::size_t trunk = active_trunk_element(c, make);
  std::vector<std::uint64_t> fired(kBuiltinSlotCount, 0);
  for (int slot = 0; slot < kBuiltinSlotCount; ++slot) {
    if (!(present >> slot & 1)) continue;
    SCOPED_TRACE("injection into slot " + std::to_string(slot) + " " +
                 std::string(builtin_slot(slot).name));
    fired[static_cast<std::size_t>(slot)] =
        fired_at_probe_step(c, make, graph, probe_injections(slot, Dims::from(c), trunk));
    const std::uint64_t expected = downstream_closure(slot, present);
    EXPECT_EQ(slot_list(fired[static_cast<std::size_t>(slot)]), slot_list(expected));
  }
  return fired;
}

// The dump of the probe step (its only first-fire step) of a recorded run with the slot's probe.
inline std::string probe_dump(const Config& c, const MakeBackend& make, bool graph, int slot,
                              std::size_t trunk, const std::filesystem::path& dir) {
  SessionOptions o;
  o.graph = graph;
  o.out_dir = dir.string();
  for (const auto& spec : probe_injections(slot, Dims::from(c), trunk))
    o.injections.push_back(parse_injection(spec));
  Session s(c, make(c), o);
  s.run();
  if (s.dump_paths().size() != 1) {
    ADD_FAILURE() << "expected one dump, got " << s.dump_paths().size();
    return "";
  }
  return s.dump_paths()[0];
}

// For every present slot: the dump made by injecting into it replays, with its recorded injection
// made again, to the dumped buffers (bit for bit when `tolerance` is 0, else the same non-finite
// elements and a norm-wise relative error within it) and says "reproducible"; without the
// injection the replayed step fires nothing and the verdict is "transient", naming the injection.
inline void expect_dumps_replay_their_own_step(const Config& c, const MakeBackend& make, bool graph,
                                               double tolerance, const std::string& name) {
  const std::uint64_t present = present_slots(c);
  const std::size_t trunk = active_trunk_element(c, make);
  const auto base = temp_dir(name);
  for (int slot = 0; slot < kBuiltinSlotCount; ++slot) {
    if (!(present >> slot & 1)) continue;
    SCOPED_TRACE("dump of an injection into slot " + std::to_string(slot) + " " +
                 std::string(builtin_slot(slot).name));
    const std::string path = probe_dump(c, make, graph, slot, trunk, base / std::to_string(slot));
    if (path.empty()) continue;
    const DumpData dump = read_dump(path);
    EXPECT_EQ(dump.step, kProbeStep);
    std::uint64_t dumped = 0;
    for (const DumpSlot& s : dump.slots) dumped |= std::uint64_t{1} << s.index;
    EXPECT_EQ(slot_list(dumped), slot_list(downstream_closure(slot, present)));

    const Config dc = dump_config(dump);
    {
      auto backend = make(dc);
      const ReplayResult again = replay_dump(dump, *backend, ReplayOptions{true});
      EXPECT_TRUE(again.injections_replayed);
      EXPECT_EQ(again.verdict, Verdict::Reproducible);
      EXPECT_EQ(again.slots.size(), dump.slots.size());
      for (const ReplaySlot& r : again.slots) {
        SCOPED_TRACE("replayed slot " + std::string(builtin_slot(r.index).name));
        EXPECT_EQ(r.replayed_kinds, r.dumped_kinds);
        if (tolerance == 0) {
          EXPECT_TRUE(r.match.equal)
              << r.match.differing << " elements differ, rel " << r.match.rel_error;
        } else {
          EXPECT_TRUE(r.match.same_nonfinite);
          EXPECT_LE(r.match.rel_error, tolerance);
        }
      }
    }
    {
      auto backend = make(dc);
      const ReplayResult plain = replay_dump(dump, *backend);
      EXPECT_FALSE(plain.injections_replayed);
      EXPECT_TRUE(plain.slot_injection_recorded());
      EXPECT_EQ(plain.verdict, Verdict::Transient);
      EXPECT_EQ(plain.replayed_flags, StepFlags(kBuiltinSlotCount));
    }
  }
  std::filesystem::remove_all(base);
}

}  // namespace nanscope::test
