// The README's and docs/files.md's promises about nanscope-run, through the built binary:
// validate's exit codes, --guard keeping the parameters of a step that fired, and replay's
// buffer_bit_equal.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "io/dump_file.h"
#include "test_support.h"

using namespace nanscope::test::cli;

namespace {

// One fold of four steps, NaN into h_s1 at step 1 and into the batch at step 2: two first-fire
// dumps, each holding the state before its step.
std::string two_dumps_run(const std::string& out, bool guard) {
  const std::string small1 =
      "--folds 1 --steps-per-fold 4 --set data.bars=400 --set model.batch=8 --set model.hidden=16 "
      "--set model.bottleneck=8 --set model.iqn_n=4 --set model.iqn_n_target=4 "
      "--set model.iqn_k=4 --set model.iqn_cos=8 --set model.aux_hidden=8";
  const Result r = run(std::string("--backend cpu ") + (guard ? "--guard " : "") + "--out " + out +
                       " --inject slot:h_s1@0:1 --inject slot:batch@0:2 " + small1);
  EXPECT_EQ(r.code, 1) << r.out;  // something fired
  return r.out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST(CliPromises, ValidateExits0On66OrOn78WithTheReason) {
  const auto dir = nanscope::test::temp_dir("cli_validate");
  const std::string out = (dir / "run").string();
  ASSERT_EQ(run("--backend cpu --out " + out + " --inject slot:aux_loss@0:1 " + kSmall).code, 1);

  const Result good = run("validate " + out + "/run.h5");
  EXPECT_EQ(good.code, 0) << good.out;
  const Result dump = run("validate " + out + "/dumps/fold000_step00000001_aux_loss.h5");
  EXPECT_EQ(dump.code, 0) << dump.out;

  const Result missing = run("validate " + (dir / "nothing.h5").string());
  EXPECT_EQ(missing.code, 66) << missing.out;
  EXPECT_NE(missing.out.find((dir / "nothing.h5").string()), std::string::npos) << missing.out;

  const std::string junk = nanscope::test::write_file(dir / "junk.h5", "not hdf5 at all");
  const Result bad = run("validate " + junk);
  EXPECT_EQ(bad.code, 78) << bad.out;
  EXPECT_NE(bad.out.find(junk), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("not an HDF5 file"), std::string::npos) << bad.out;
}

TEST(CliPromises, GuardLeavesTheParametersOfAStepThatFired) {
  // The dump of step 2 holds the state after step 1, the dump of step 1 the state before it: with
  // --guard the update of step 1 (h_s1 NaN, so every gradient) is skipped, the parameters and
  // Adam's step count stay bit for bit; without it the update runs.
  const auto dir = nanscope::test::temp_dir("cli_guard");
  for (bool guard : {true, false}) {
    const std::string out = (dir / (guard ? "guard" : "plain")).string();
    two_dumps_run(out, guard);
    const auto before = nanscope::read_dump(out + "/dumps/fold000_step00000001_h_s1.h5");
    const auto after = nanscope::read_dump(out + "/dumps/fold000_step00000002_batch.h5");
    ASSERT_FALSE(before.state.params.empty());
    if (guard) {
      EXPECT_TRUE(same_bits(before.state.params, after.state.params));
      EXPECT_TRUE(same_bits(before.state.adam_m, after.state.adam_m));
      EXPECT_EQ(before.state.adam_t, after.state.adam_t);
    } else {
      EXPECT_FALSE(same_bits(before.state.params, after.state.params));
      EXPECT_EQ(after.state.adam_t, before.state.adam_t + 1);
    }
  }
}

TEST(CliPromises, ReplaysBufferBitEqualIsTrueForTheDumpedStepAndFalseForAnother) {
  // On the CPU a dump replayed with its recorded injection is the dumped step bit for bit: every
  // slot's buffer_bit_equal is true. Replayed without it (the step runs clean), the slots that
  // held the injected NaN are not bit-equal.
  const auto dir = nanscope::test::temp_dir("cli_bit_equal");
  const std::string out = (dir / "run").string();
  run_stdout("--backend cpu --out " + out + " --inject slot:q_expected@1:2:posinf " + kSmall);
  const std::string dump = out + "/dumps/fold001_step00000002_q_expected.h5";
  const Result again = run_stdout("replay --with-injections --json " + dump);
  ASSERT_EQ(again.code, 0) << again.out;
  const auto with = nlohmann::json::parse(again.out);
  ASSERT_FALSE(with["slots"].empty());
  for (const auto& slot : with["slots"]) EXPECT_EQ(slot["buffer_bit_equal"], true) << slot["name"];

  const Result clean = run_stdout("replay --json " + dump);
  ASSERT_EQ(clean.code, 0) << clean.out;
  const auto without = nlohmann::json::parse(clean.out);
  bool q_expected_seen = false;
  for (const auto& slot : without["slots"])
    if (slot["name"] == "q_expected") {
      q_expected_seen = true;
      EXPECT_EQ(slot["buffer_bit_equal"], false);
      EXPECT_EQ(slot["buffer_equal"], false);
    }
  EXPECT_TRUE(q_expected_seen) << clean.out;
}
