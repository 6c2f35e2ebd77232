// Every slot is the buffer its consumers read (CPU backend): one NaN injected into a slot fires
// exactly the slot's documented closure at that step, the consumer lists of docs/slots.md are the
// slot table's, and a dump replays its own step. The GPU tests run the same checks on CUDA.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "core/config_io.h"
#include "model/backend.h"
#include "propagation_checks.h"

using namespace nanscope;
using namespace nanscope::test;

namespace {

const MakeBackend kCpu = [](const Config& c) { return make_cpu_backend(c); };

// The consumers column of docs/slots.md's slot table, as masks by slot index.
std::array<std::uint64_t, kBuiltinSlotCount> documented_consumers() {
  std::ifstream in(std::string(NANSCOPE_SOURCE_DIR) + "/docs/slots.md");
  std::array<std::uint64_t, kBuiltinSlotCount> out{};
  std::array<bool, kBuiltinSlotCount> seen{};
  const std::regex row(R"(^\| (\d+) \| `[^`]+` \|.*\| ([0-9, ]+|none) \|$)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const int slot = std::stoi(m[1]);
    if (slot < 0 || slot >= kBuiltinSlotCount) continue;
    seen[static_cast<std::size_t>(slot)] = true;
    if (m[2] == "none") continue;
    std::stringstream list(m[2]);
    for (std::string item; std::getline(list, item, ',');)
      out[static_cast<std::size_t>(slot)] |= std::uint64_t{1} << std::stoi(item);
  }
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    EXPECT_TRUE(seen[static_cast<std::size_t>(s)]) << "no row for slot " << s;
  return out;
}

}  // namespace

TEST(Propagation, TheDocumentedConsumersAreTheSlotTables) {
  const auto documented = documented_consumers();
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    EXPECT_EQ(slot_list(documented[static_cast<std::size_t>(s)]),
              slot_list(mask_of(builtin_slot(s).consumers)))
        << "slot " << s << " " << builtin_slot(s).name;
}

TEST(Propagation, TheClosureFollowsConsumersAndPassesThroughAbsentSlots) {
  const std::uint64_t all = (std::uint64_t{1} << kBuiltinSlotCount) - 1;
  EXPECT_EQ(slot_list(downstream_closure(kTotalLoss, all)), "total_loss");
  EXPECT_EQ(slot_list(downstream_closure(kGradNorm, all)), "grad_norm adam_moments params");
  EXPECT_EQ(slot_list(downstream_closure(kBwDHS2Aux, all)),
            "grad_norm adam_moments params iqn_trunk_m bw_d_h_s2.aux bw_d_h_s2.iqn");
  // Without the IQN head the encoder reads the trunk gradient right after the aux SAXPY.
  const std::uint64_t no_iqn = present_slots(propagation_config(false));
  EXPECT_EQ(slot_list(downstream_closure(kBwDHS2Aux, no_iqn)),
            "grad_norm adam_moments params bw_d_h_s2.aux");
}

TEST(Propagation, EveryInjectionFiresItsClosure_WithTheIqnHead) {
  expect_probes_fire_their_closures(propagation_config(true), kCpu, false);
}

TEST(Propagation, EveryInjectionFiresItsClosure_WithoutTheIqnHead) {
  expect_probes_fire_their_closures(propagation_config(false), kCpu, false);
}

// The three injections the slots' consumers once missed: a NaN in iqn_phi reaches the quantile
// layer, one in cql_lse reaches the CQL term (total_loss) and its gradient, one in grad_norm
// reaches the update through the clip.
TEST(Propagation, PhiReachesTheQuantilesLseTheLossAndNormTheUpdate) {
  const Config c = propagation_config(true);
  auto fired = [&](const std::string& spec) { return fired_at_probe_step(c, kCpu, false, {spec}); };
  const std::uint64_t phi = fired("slot:iqn_phi@0:2:nan:5");
  for (int s : {kIqnPhi, kIqnQuantiles, kIqnLoss, kTotalLoss, kDBranchLogits, kIqnDHS2, kBwDHS2Iqn})
    EXPECT_TRUE(phi >> s & 1) << builtin_slot(s).name;
  const std::uint64_t lse = fired("slot:cql_lse@0:2:nan:3");
  for (int s :
       {kCqlLse, kTotalLoss, kCqlDValueLogits, kDValueLogits, kDAdvLogits, kBwDHS2Main, kParams})
    EXPECT_TRUE(lse >> s & 1) << builtin_slot(s).name;
  EXPECT_EQ(slot_list(fired("slot:grad_norm@0:2")), "grad_norm adam_moments params");
}

TEST(Replay, EveryInjectedSlotsDumpReplaysItsOwnStep) {
  expect_dumps_replay_their_own_step(propagation_config(true), kCpu, false, 0.0,
                                     "replay_every_slot");
}

// A dump made when the batch fires holds the step's own IQN draws (no injection: a NaN bar in the
// data), and replays to the very step: the same flags and every dumped buffer bit for bit.
TEST(Replay, ABatchFireDumpsTheStepsOwnDrawsAndReplaysIt) {
  Config c = sentinel_config({"data.corrupt_bar=300", "data.keep_bad_rows=true", "run.folds=1",
                              "run.steps_per_fold=40", "halt.on_fire=\"step\""});
  SessionOptions o;
  o.out_dir = temp_dir("replay_corrupt_bar").string();
  Session s(c, make_cpu_backend(c), o);
  s.run();
  ASSERT_TRUE(s.halt());
  ASSERT_EQ(s.dump_paths().size(), 1u);
  const DumpData dump = read_dump(s.dump_paths()[0]);
  EXPECT_EQ(dump.entry_slot, kBatch);
  ASSERT_GT(dump.step, 0);  // a step whose draws differ from the step before's

  // The draws of that step, from a clean session sampled up to it.
  Session ref(c, make_cpu_backend(c));
  for (int k = 0; k < dump.step; ++k) ref.step();
  ref.step_phase();  // the sample phase of the dumped step
  const BatchContext own = ref.backend().batch_context();
  for (const char* field : {"tau", "tau_target", "tau_greedy", "obs", "actions"}) {
    const NamedArray* want = nullptr;
    const NamedArray* got = nullptr;
    for (const auto& a : own)
      if (a.name == field) want = &a;
    for (const auto& a : dump.batch)
      if (a.name == field) got = &a;
    ASSERT_TRUE(want && got) << field;
    EXPECT_TRUE(same_bits(got->values, want->values)) << field;
  }

  auto backend = make_cpu_backend(dump_config(dump));
  const ReplayResult r = replay_dump(dump, *backend);
  EXPECT_EQ(r.verdict, Verdict::Reproducible);
  EXPECT_TRUE(r.injections.empty());
  EXPECT_EQ(r.replayed_flags, s.history().back().flags);
  for (const ReplaySlot& rs : r.slots) EXPECT_TRUE(rs.match.equal) << builtin_slot(rs.index).name;
  std::filesystem::remove_all(o.out_dir);
}

// Injections given to the session (the CLI's --inject, the workbench's panel) are part of the
// recorded config, so a dump's replay can tell an injected fire from a real one.
TEST(Replay, InjectionsArePartOfTheRecordedConfig) {
  Config c = propagation_config(true);
  SessionOptions o;
  o.injections.push_back(parse_injection("slot:bn_z@0:2"));
  Session s(c, make_cpu_backend(c), o);
  ASSERT_EQ(s.config().inject.faults.size(), 1u);
  EXPECT_EQ(s.config().inject.faults[0], "slot:bn_z@0:2");
  EXPECT_NE(to_toml(s.config()).find("slot:bn_z@0:2"), std::string::npos);
}
