// Time travel on the CPU backend: checkpoints, recomputation bit for bit, the ring's budget and
// the run file's /checkpoints (docs/files.md, "Checkpoints").
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "io/dump_file.h"
#include "io/h5.h"
#include "io/run_file.h"
#include "session/checkpoint_ring.h"
#include "time_travel_checks.h"

namespace nanscope::test {
namespace {

std::unique_ptr<Backend> cpu(const Config& c) {
  return make_cpu_backend(c);
}

TEST(TimeTravel, AnyStepRecomputedBitForBitOnTheCpu) {
  expect_time_travel_bit_exact(cpu, false, "cpu");
}

TEST(TimeTravel, TheStatesKeptNearACellRecomputeItsNeighboursBitForBit) {
  expect_kept_states_exact(cpu, false, "cpu");
}

TEST(TimeTravel, TheRingKeepsTheNewestWithinItsBudget) {
  Config c = time_travel_config();
  const std::size_t bytes = make_cpu_backend(c)->checkpoint_bytes();
  EXPECT_EQ(CheckpointRing::capacity_for(c, bytes), 9);  // 3 per fold, 3 folds
  // A budget for 4: the last 4 taken are kept, oldest first.
  c.history.memory_mb = 1;
  const int fit = static_cast<int>((std::size_t{1} << 20) / bytes);
  ASSERT_GE(fit, 4) << "the tiny model's state is small";
  CheckpointRing ring(c, 4);
  for (int f = 0; f < 3; ++f)
    for (int s = 0; s < 11; ++s)
      if (ring.due(s)) ring.take(f, s, f * 11 + s);
  ASSERT_EQ(ring.marks().size(), 4u);
  EXPECT_EQ(ring.marks().front().fold, 1);
  EXPECT_EQ(ring.marks().front().step, 8);
  EXPECT_EQ(ring.at_or_before(2, 7)->step, 4);
  EXPECT_FALSE(ring.at_or_before(0, 10));
  c.history.checkpoint_every = 0;
  EXPECT_EQ(CheckpointRing::capacity_for(c, bytes), 0);
}

TEST(TimeTravel, ABudgetTooSmallForOneCheckpointIsRefusedNamingTheKey) {
  Config c;  // the default model: a few MiB per checkpoint
  c.history.memory_mb = 1;
  const std::string what = error_of([&] { CheckpointRing::capacity_for(c, 4u << 20); });
  EXPECT_NE(what.find("history.memory_mb"), std::string::npos) << what;
}

TEST(TimeTravel, AStepBeforeItsCheckpointOrInAnotherFoldIsRefused) {
  const Config c = time_travel_config();
  Session run(c, make_cpu_backend(c));
  run.run(RunUntil{RunUntil::Kind::Steps, 6, -1});
  const Checkpoint at4 = run.read_checkpoint(*run.checkpoint_at_or_before(0, 5));
  EXPECT_EQ(at4.step, 4);
  Materializer m(c, cpu, false);
  EXPECT_NE(error_of([&] { m.materialize(at4, MaterializeRequest{0, 3, {}}); }), "");
  EXPECT_NE(error_of([&] { m.materialize(at4, MaterializeRequest{1, 5, {}}); }), "");
  EXPECT_NE(error_of([&] { m.materialize(at4, MaterializeRequest{0, 11, {}}); }), "");
  // Cancelled between steps: nothing comes back.
  EXPECT_FALSE(m.materialize(at4, MaterializeRequest{0, 9, {}}, [] { return true; }));
  // Every slot of the step without a list, with progress up to the steps in all.
  int last = 0, total = 0;
  const auto all = m.materialize(at4, MaterializeRequest{0, 6, {}}, {}, [&](int d, int n) {
    last = d;
    total = n;
  });
  ASSERT_TRUE(all);
  EXPECT_EQ(last, 3);
  EXPECT_EQ(total, 3);
  int existing = 0;
  for (int s = 0; s < kBuiltinSlotCount; ++s) existing += run.backend().slot(s).exists() ? 1 : 0;
  EXPECT_EQ(static_cast<int>(all->slots.size()), existing);
}

// nanscope-run materialize: a dump of the step that replays, the JSON, and the refusals.
TEST(TimeTravel, MaterializeWritesAReplayableDumpOfAnyStep) {
  const auto dir = temp_dir("materialize_cli");
  const std::string out = (dir / "run").string();
  auto r = cli::run("--backend cpu " + cli::kSmall +
                    " --set run.steps_per_fold=9 --set history.checkpoint_every=4 "
                    "--set history.in_run_file=true --inject slot:h_s2@1:5 --out " +
                    out + " --quiet");
  ASSERT_EQ(r.code, 1) << r.out;  // fired (halt at the fold's end)
  const std::string dump = (dir / "f1s6.h5").string();
  r = cli::run_stdout("materialize " + out + "/run.h5 --fold 1 --step 6 --backend cpu --out " +
                      dump + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["checkpoint_step"], 4);
  EXPECT_EQ(j["steps_run"], 3);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["same_backend"], true);
  EXPECT_EQ(j["agreement"]["steps_compared"], 3);
  EXPECT_EQ(j["agreement"]["health_bit_equal"], true);
  const DumpData d = read_dump(dump);
  EXPECT_EQ(d.origin, "materialized");
  EXPECT_EQ(d.checkpoint_step, 4);
  EXPECT_EQ(d.fold, 1);
  EXPECT_EQ(d.step, 6);
  EXPECT_GT(d.slots.size(), 30u);
  // Replayed from its context, the step gives its buffers again.
  r = cli::run_stdout("replay " + dump + " --backend cpu --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto replayed = nlohmann::json::parse(r.out);  // kept: the loop walks into it
  for (const auto& s : replayed["slots"]) EXPECT_TRUE(s["buffer_equal"].get<bool>()) << s.dump();
  // The entry step itself: the injected NaN is in h_s2, as the first fire's dump has it.
  r = cli::run_stdout("materialize " + out + "/run.h5 --fold 1 --step 5 --slot h_s2 --out " +
                      (dir / "f1s5.h5").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto e = nlohmann::json::parse(r.out);
  EXPECT_EQ(e["slots"][0]["name"], "h_s2");
  EXPECT_EQ(e["slots"][0]["kinds"][0], "nan");
  EXPECT_EQ(e["agreement"]["dump_bit_equal"], true);
  EXPECT_EQ(e["agreement"]["dump_slots"], 1);
  // A dump of a slot downstream of the entry still names the step's entry (h_s2), as the whole
  // step's dump does.
  r = cli::run_stdout("materialize " + out + "/run.h5 --fold 1 --step 5 --slot bn_z --out " +
                      (dir / "f1s5_bn_z.h5").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto downstream = nlohmann::json::parse(r.out);
  EXPECT_EQ(downstream["slots"][0]["kinds"][0], "nan");
  EXPECT_EQ(downstream["entry_slot"], kHS2);
  r = cli::run_stdout("materialize " + out + "/run.h5 --fold 1 --step 5 --out " +
                      (dir / "f1s5_all.h5").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["entry_slot"], kHS2);
  // compare --slot: the slot's buffers at two steps, element by element, recomputed.
  r = cli::run_stdout("compare " + out + "/run.h5 --fold 0 --steps 1 7 --slot h_s2 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto cmp = nlohmann::json::parse(r.out)["elementwise"];
  EXPECT_EQ(cmp["name"], "h_s2");
  EXPECT_GT(cmp["differing"].get<int>(), 0);
  EXPECT_GE(cmp["max_abs_index"].get<int>(), 0);
  // A clean step's dump (entry_slot -1) replays and validates too; a repeated --slot is one.
  const std::string clean = (dir / "clean.h5").string();
  r = cli::run("materialize " + out + "/run.h5 --fold 0 --step 2 --slot h_s1 --slot h_s1 --out " +
               clean);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_dump(clean).entry_slot, -1);
  EXPECT_EQ(read_dump(clean).slots.size(), 1u);
  EXPECT_EQ(cli::run("validate " + clean).code, 0);
  EXPECT_EQ(cli::run("replay " + clean + " --backend cpu").code, 0);
  // --out: never the run file itself, an existing file only with --force.
  EXPECT_EQ(
      cli::run("materialize " + out + "/run.h5 --fold 0 --step 2 --out " + out + "/run.h5").code,
      2);
  EXPECT_EQ(read_run_file(out + "/run.h5").checkpoints.size(), 6u);
  EXPECT_EQ(cli::run("materialize " + out + "/run.h5 --fold 0 --step 2 --out " + clean).code, 2);
  EXPECT_EQ(
      cli::run("materialize " + out + "/run.h5 --fold 0 --step 2 --force --out " + clean).code, 0);
  // Refusals: a step the fold did not run (2), a slot that does not exist (2), a file without
  // checkpoints (78, naming the setting).
  EXPECT_EQ(cli::run("materialize " + out + "/run.h5 --fold 1 --step 9 --out x.h5").code, 2);
  EXPECT_EQ(
      cli::run("materialize " + out + "/run.h5 --fold 0 --step 1 --slot nope --out x.h5").code, 2);
  const std::string bare = (dir / "bare").string();
  ASSERT_EQ(cli::run("--backend cpu " + cli::kSmall + " --out " + bare + " --quiet").code, 0);
  r = cli::run("materialize " + bare + "/run.h5 --fold 0 --step 1 --out x.h5");
  EXPECT_EQ(r.code, 78);
  EXPECT_NE(r.out.find("history.in_run_file"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// A file another backend wrote, recomputed here: said so, with how far it is from what the run
// recorded. The stand-in for a CUDA run's file is a CPU run's with its `backend` attribute set to
// cuda (the GPU session's fixture is a real one); the recomputation is then the CPU backend's own,
// so the differences it reports are exactly zero, and the label is what is checked.
TEST(TimeTravel, AFileOfAnotherBackendIsLabelledAsSuch) {
  const auto dir = temp_dir("materialize_other_backend");
  const std::string out = (dir / "run").string();
  ASSERT_EQ(cli::run("--backend cpu " + cli::kSmall +
                     " --set history.checkpoint_every=2 --set history.in_run_file=true --out " +
                     out + " --quiet")
                .code,
            0);
  const std::string file = out + "/run.h5";
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Adelete(f, "backend"), 0);
    h5::write_attr(f, "backend", std::string("cuda"), file);
    H5Fclose(f);
  }
  auto r = cli::run_capture("materialize " + file + " --fold 1 --step 2 --backend cpu --out " +
                                (dir / "m.h5").string() + " --json",
                            false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["run_backend"], "cuda");
  EXPECT_EQ(j["same_backend"], false);
  EXPECT_EQ(j["agreement"]["steps_compared"], 1);
  EXPECT_EQ(j["agreement"]["health_max_rel"], 0.0);
  r = cli::run("materialize " + file + " --fold 1 --step 2 --backend cpu --force --out " +
               (dir / "m.h5").string());
  EXPECT_NE(r.out.find("(the run was cuda: float32 rounding may differ)"), std::string::npos)
      << r.out;
  std::filesystem::remove_all(dir);
}

// A run file the CUDA backend wrote on an H100 (2026-12-05: the small network, two folds of 9
// steps, checkpoints every 4 steps, h_s2 injected at fold 1 step 5), recomputed on the CPU: the
// entry the CUDA run recorded is found again, and the recomputed steps' health is the run's within
// float32 rounding. The file predates the `trainer` attribute and /slots' consumers: it is read as
// nanscope's own.
TEST(TimeTravel, ARunFileMadeOnTheGpuIsRecomputedOnTheCpu) {
  const auto dir = temp_dir("materialize_cuda_file");
  const std::string file =
      std::string(NANSCOPE_SOURCE_DIR) + "/tests/data/v0.1.0/run_schema2_cuda.h5";
  const RunFileData run = read_run_file(file);
  ASSERT_EQ(run.backend, "cuda");
  ASSERT_EQ(run.table->trainer(), "nanscope");
  ASSERT_EQ(run.folds.size(), 2u);
  ASSERT_EQ(run.folds[1].entry_slot.value_or(-1), kHS2);
  ASSERT_EQ(run.folds[1].entry_step.value_or(-1), 5);
  struct Case {
    int fold, step, entry;
  };
  for (const Case c : {Case{1, 5, kHS2}, Case{0, 8, -1}, Case{1, 2, -1}}) {
    const std::string out = (dir / fmt::format("m{}_{}.h5", c.fold, c.step)).string();
    auto r = cli::run_capture(fmt::format("materialize {} --fold {} --step {} --backend cpu --out "
                                          "{} --json",
                                          file, c.fold, c.step, out),
                              false);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["run_backend"], "cuda");
    EXPECT_EQ(j["same_backend"], false);
    EXPECT_EQ(j["entry_slot"], c.entry) << c.fold << ":" << c.step;
    EXPECT_GE(j["agreement"]["steps_compared"], 1);
    EXPECT_EQ(j["agreement"]["health_bit_equal"], false) << "two backends, two roundings";
    EXPECT_LT(j["agreement"]["health_max_rel"], 1e-4) << c.fold << ":" << c.step;
    const DumpData d = read_dump(out);
    EXPECT_EQ(d.slots.size(), static_cast<std::size_t>(kBuiltinSlotCount)) << "every slot present";
  }
  std::filesystem::remove_all(dir);
}

// A run file of nanscope 0.1.0 (36 slots stored): its steps recompute equal to its health, bit for
// bit, on the slots it stores; the later slot 36 is measured in the dump, not compared.
TEST(TimeTravel, AFileOfFewerSlotsAgreesOnTheSlotsItStores) {
  const auto dir = temp_dir("materialize_0_1_0");
  const std::string dump = (dir / "f1s2.h5").string();
  const auto r = cli::run_stdout("materialize " + std::string(NANSCOPE_SOURCE_DIR) +
                                 "/tests/data/v0.1.0/run_schema2_checkpoints.h5 --fold 1 --step 2 "
                                 "--backend cpu --out " +
                                 dump + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["agreement"]["steps_compared"], 1);
  EXPECT_EQ(j["agreement"]["health_bit_equal"], true);
  const DumpData d = read_dump(dump);
  ASSERT_EQ(d.flags.size(), static_cast<std::size_t>(kBuiltinSlotCount));
}

}  // namespace
}  // namespace nanscope::test
