// Run files, dumps and replay: round trips, refusals of bad files, failing writes.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/config_io.h"
#include "core/errors.h"
#include "io/dump_file.h"
#include "io/h5.h"
#include "io/run_file.h"
#include "session/replay.h"
#include "session/session.h"
#include "test_support.h"

using namespace nanscope;
using nanscope::test::error_of;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Session> recorded_run(const std::string& dir, std::vector<std::string> injections,
                                      Precision precision = Precision::Float32) {
  Config c = test::tiny_config(precision);
  c.run.folds = 2;
  c.run.steps_per_fold = 5;
  c.halt.on_fire = HaltOnFire::Never;
  SessionOptions o;
  for (const auto& i : injections) o.injections.push_back(parse_injection(i));
  o.out_dir = dir;
  auto s = std::make_unique<Session>(c, make_cpu_backend(c), o);
  s->run();
  return s;
}

Verdict replay_verdict(const std::string& dump_path) {
  DumpData d = read_dump(dump_path);
  auto backend = make_cpu_backend(dump_config(d));
  return replay_dump(d, *backend).verdict;
}

}  // namespace

TEST(Files, RunFileRoundTripsWhatTheSessionReported) {
  auto dir = test::temp_dir("files_roundtrip");
  auto s = recorded_run(dir.string(), {"slot:aux_loss@0:2:neginf:1"});
  RunFileData r = read_run_file(s->run_file_path());
  ASSERT_EQ(r.folds.size(), 2u);
  ASSERT_EQ(r.steps.size(), 10u);
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.folds[0].entry_slot.value_or(-1), kAuxLoss);
  EXPECT_FALSE(r.folds[1].entry_slot);
  for (int slot = 0; slot < kBuiltinSlotCount; ++slot) {
    EXPECT_EQ(r.folds[0].slots[slot].state, s->folds()[0].flags.slots[slot].state);
    EXPECT_EQ(r.folds[0].slots[slot].kinds, s->folds()[0].flags.slots[slot].kinds);
    EXPECT_EQ(r.folds[0].slots[slot].first_step, s->folds()[0].flags.slots[slot].first_step);
  }
  EXPECT_EQ(r.steps[2].flags[kAuxLoss], kKindNegInf);
  EXPECT_EQ(r.steps[7].fold, 1);
  EXPECT_EQ(r.steps[7].step, 2);
  // Every loss term and norm, the per-group norms included, as the session recorded them.
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    for (const LossTerm& t : kLossTerms) {  // NaN where not reported (the loss scale) both sides
      const double got = r.steps[i].losses.*t.member, want = s->history()[i].losses.*t.member;
      EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << t.name;
    }
    EXPECT_EQ(r.steps[i].losses.group_norm, s->history()[i].losses.group_norm);
  }
  EXPECT_GT(r.steps[4].losses.group_norm[0], 0.0);
  ASSERT_EQ(s->dump_paths().size(), 1u);
  EXPECT_EQ(fs::path(s->dump_paths()[0]).filename(), "fold000_step00000002_aux_loss.h5");
  bool found = false;
  for (const auto& e : r.events)
    if (e.kind == EventKind::FirstFire && e.dump == "dumps/fold000_step00000002_aux_loss.h5")
      found = true;
  EXPECT_TRUE(found);
  EXPECT_FALSE(fs::exists(s->run_file_path() + ".tmp"));
  // /steps/health: each step's rows as the session measured them, bit for bit.
  for (std::size_t i = 0; i < r.steps.size(); ++i)
    for (int slot = 0; slot < kBuiltinSlotCount; ++slot)
      for (int k = 0; k < kHealthFieldCount; ++k) {
        const float a = r.steps[i].health[slot][k], b = s->history()[i].health[slot][k];
        EXPECT_TRUE(a == b || (a != a && b != b)) << "step " << i << " slot " << slot;
      }
  EXPECT_EQ(r.steps[2].health[kAuxLoss][kHealthNonfinite], 1.f);  // the one -Inf injected
}

TEST(Files, TheRunFilesScenarioIsReadBackAndAnythingElseIsRefused) {
  auto dir = test::temp_dir("files_scenario");
  auto s = recorded_run(dir.string(), {});
  RunFileData r = read_run_file(s->run_file_path());
  r.scenario = "lr-explosion";
  const std::string good = (dir / "good.h5").string();
  write_run_file(good, r);
  EXPECT_EQ(read_run_file(good).scenario, "lr-explosion");
  // Not a name (a crafted file): refused, naming the file and the attribute.
  for (const std::string& bad : {std::string("x\nstatus bar"), std::string(65, 'a')}) {
    r.scenario = bad;
    const std::string path = (dir / "bad.h5").string();
    write_run_file(path, r);
    const std::string what = test::error_of([&] { (void)read_run_file(path); });
    EXPECT_NE(what.find(path + ": root attribute 'scenario' is not a scenario name"),
              std::string::npos)
        << what;
  }
}

TEST(Files, AVersionOneRunFileStillOpens) {
  // A run file as nanscope wrote it before /steps/health (schema_version 1): read whole, every
  // health row unmeasured.
  auto dir = test::temp_dir("files_v1");
  auto s = recorded_run(dir.string(), {});
  const std::string v1 = (dir / "v1.h5").string();
  fs::copy_file(s->run_file_path(), v1);
  hid_t f = H5Fopen(v1.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Ldelete(f, "steps/health", H5P_DEFAULT);
  H5Adelete(f, "schema_version");
  h5::write_attr(f, "schema_version", std::int64_t{1}, "v1");
  H5Fclose(f);
  const RunFileData r = read_run_file(v1);
  ASSERT_EQ(r.steps.size(), s->history().size());
  EXPECT_EQ(r.folds.size(), s->folds().size());
  for (const RunStepRow& row : r.steps)
    for (const HealthRow& h : row.health) EXPECT_FALSE(measured(h));
}

TEST(Files, DumpHoldsTheBufferAndTheStateBeforeTheStep) {
  auto dir = test::temp_dir("files_dump");
  auto s = recorded_run(dir.string(), {"param:aux.w2@0:3:posinf:2"});
  ASSERT_FALSE(s->dump_paths().empty());
  DumpData d = read_dump(s->dump_paths()[0]);
  EXPECT_EQ(d.fold, 0);
  EXPECT_EQ(d.step, 3);
  EXPECT_EQ(d.global_step, 3);
  EXPECT_EQ(d.entry_slot, kAuxPredNb);
  EXPECT_EQ(d.state.adam_t, 3);  // three updates happened before step 3
  // The persistent fault is in the parameters before the step.
  auto it = std::find(d.param_names.begin(), d.param_names.end(), "aux.w2");
  ASSERT_NE(it, d.param_names.end());
  std::size_t off = 0;
  for (auto p = d.param_names.begin(); p != it; ++p) {
    std::size_t n = 1;
    for (auto x : d.param_shapes[static_cast<std::size_t>(p - d.param_names.begin())]) n *= x;
    off += n;
  }
  EXPECT_TRUE(std::isinf(d.state.params[off + 2]));
  EXPECT_FALSE(std::isinf(d.state.target[off + 2]));
  const DumpSlot* pred = nullptr;
  for (const auto& sl : d.slots)
    if (sl.index == kAuxPredNb) pred = &sl;
  ASSERT_TRUE(pred);
  EXPECT_EQ(pred->shape, (std::vector<std::uint64_t>{5, 2}));
  EXPECT_NE(pred->scan.kinds, 0);
  EXPECT_EQ(d.flags[kAuxPredNb], s->history()[3].flags[kAuxPredNb]);
}

TEST(Replay, ParameterFaultIsReproducibleSlotFaultIsTransient) {
  auto a = recorded_run(test::temp_dir("replay_param").string(), {"param:encoder.w2@0:2"});
  ASSERT_FALSE(a->dump_paths().empty());
  EXPECT_EQ(replay_verdict(a->dump_paths()[0]), Verdict::Reproducible);
  auto b = recorded_run(test::temp_dir("replay_slot").string(), {"slot:bn_z@1:3:nan:all"});
  ASSERT_FALSE(b->dump_paths().empty());  // the first: the injected step itself
  EXPECT_EQ(replay_verdict(b->dump_paths()[0]), Verdict::Transient);
  auto c = recorded_run(test::temp_dir("replay_batch").string(), {"slot:batch@0:1:posinf:7"});
  ASSERT_FALSE(c->dump_paths().empty());
  EXPECT_EQ(replay_verdict(c->dump_paths()[0]),
            Verdict::Transient);  // the batch context is as sampled
  auto d =
      recorded_run(test::temp_dir("replay_f64").string(), {"param:adv.b@0:1"}, Precision::Float64);
  EXPECT_EQ(replay_verdict(d->dump_paths()[0]), Verdict::Reproducible);
}

TEST(Replay, AScenarioDumpReplaysToTheSameFlags) {
  ConfigBuilder b;
  b.load_text("[init]\niqn_out_scale = 1.6e39\n", "iqn-blowup");
  Config c = b.build();
  Config t = test::tiny_config(Precision::Float32);
  c.model = t.model;
  c.data.bars = t.data.bars;
  c.run.folds = 1;
  c.run.steps_per_fold = 2;
  SessionOptions o;
  o.out_dir = test::temp_dir("replay_scenario").string();
  Session s(c, make_cpu_backend(c), o);
  s.run();
  ASSERT_FALSE(s.dump_paths().empty());
  DumpData d = read_dump(s.dump_paths()[0]);
  auto backend = make_cpu_backend(dump_config(d));
  ReplayResult r = replay_dump(d, *backend);
  EXPECT_EQ(r.verdict, Verdict::Reproducible);
  EXPECT_EQ(r.replayed_flags, s.history()[0].flags);  // bit for bit the same step
}

TEST(Files, BadFilesAreRefusedWithAClearMessage) {
  auto dir = test::temp_dir("files_bad");
  auto s = recorded_run((dir / "run").string(), {"slot:aux_loss@0:1"});
  const std::string dump = s->dump_paths().at(0);

  EXPECT_NE(error_of([&] { read_dump((dir / "missing.h5").string()); }).find("not found"),
            std::string::npos);
  test::write_file(dir / "empty.h5", "");
  EXPECT_NE(error_of([&] { read_dump((dir / "empty.h5").string()); }).find("not an HDF5 file"),
            std::string::npos);
  {  // truncated: the first half of a real dump
    std::ifstream in(dump, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir / "truncated.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  std::string msg = error_of([&] { read_dump((dir / "truncated.h5").string()); });
  EXPECT_NE(msg.find("truncated.h5"), std::string::npos) << msg;
  {  // foreign: a valid HDF5 file of another layout
    h5::AtomicFile f((dir / "foreign.h5").string());
    double x[3] = {1, 2, 3};
    h5::write_dataset(f.id(), "temperature", x, {3}, "foreign");
    f.commit();
  }
  EXPECT_NE(error_of([&] { read_dump((dir / "foreign.h5").string()); }).find("not a nanscope dump"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_run_file((dir / "foreign.h5").string());
            }).find("not a nanscope run file"),
            std::string::npos);
  {  // newer schema
    fs::copy_file(s->run_file_path(), dir / "newer.h5");
    hid_t f = H5Fopen((dir / "newer.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, "schema_version");
    h5::write_attr(f, "schema_version", std::int64_t{4}, "newer");
    H5Fclose(f);
  }
  msg = error_of([&] { read_run_file((dir / "newer.h5").string()); });
  EXPECT_NE(msg.find("newer nanscope (schema_version 4 > 3)"), std::string::npos) << msg;
}
