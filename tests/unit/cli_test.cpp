// nanscope-run as a user calls it: exit codes and what it prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_support.h"

using namespace nanscope::test::cli;

TEST(Cli, HelpAndVersion) {
  auto h = run("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--steps-per-fold"), std::string::npos);
  auto v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("nanscope-run 0."), std::string::npos);
}

TEST(Cli, RunsAndPrintsPerFoldLosses) {
  auto r = run("--backend cpu " + kSmall);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loss_first"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n   0      3 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n   1      3 "), std::string::npos) << r.out;
  auto explicit_run = run("run --backend cpu " + kSmall);
  EXPECT_EQ(explicit_run.code, 0) << explicit_run.out;
  auto quiet = run("--quiet --backend cpu " + kSmall);
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.out, "");
}

TEST(Cli, ExitCodesOfTheContract) {
  auto bad_key = run("--backend cpu --set model.hiden=3");
  EXPECT_EQ(bad_key.code, 78);
  EXPECT_NE(bad_key.out.find("model.hiden"), std::string::npos) << bad_key.out;
  auto bad_value = run("--backend cpu --set model.atoms=0");
  EXPECT_EQ(bad_value.code, 78);
  EXPECT_NE(bad_value.out.find("model.atoms"), std::string::npos) << bad_value.out;
  auto no_config = run("--backend cpu --config /nonexistent/x.toml");
  EXPECT_EQ(no_config.code, 66);
  EXPECT_NE(no_config.out.find("/nonexistent/x.toml"), std::string::npos) << no_config.out;
  EXPECT_EQ(run("--no-such-flag").code, 2);
  EXPECT_EQ(run("--backend gpu").code, 2);
  auto csv = run("--backend cpu --set data.source=csv --set data.csv=/nonexistent/bars.csv");
  EXPECT_EQ(csv.code, 66) << csv.out;
  auto cuda = run("--backend cuda " + kSmall);
  EXPECT_EQ(cuda.code, 69) << cuda.out;
}

TEST(Cli, BadCsvRowIsExit78WithItsPlace) {
  auto dir = nanscope::test::temp_dir("cli_csv");
  std::string body = "timestamp,open,high,low,close,volume\n";
  for (int i = 0; i < 5; ++i) body += std::to_string(i + 1) + ",10,11,9,10,5\n";
  body += "6,10,11,9,oops,5\n";
  auto path = nanscope::test::write_file(dir / "bars.csv", body);
  auto r = run("--backend cpu --set data.source=csv --set data.csv=" + path);
  EXPECT_EQ(r.code, 78);
  EXPECT_NE(r.out.find("bars.csv:7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("close"), std::string::npos) << r.out;
}

TEST(Cli, JsonSummaryHasTheContractsKeysAndTypes) {
  auto r = run_stdout("--backend cpu --scenario aux-blowup --until-fire --json " + kSmall);
  ASSERT_EQ(r.code, 1) << r.out;
  auto j = nlohmann::json::parse(r.out);  // stdout holds the JSON object and nothing else
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_TRUE(j["nanscope_version"].is_string());
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_TRUE(j["device"].is_string());
  EXPECT_TRUE(j["steps_run"].is_number_integer());
  EXPECT_EQ(j["steps_run"], 2);
  EXPECT_TRUE(j.contains("run_file"));
  EXPECT_TRUE(j["dumps"].is_array());
  EXPECT_EQ(j["halt"]["reason"], "halt_nan");
  EXPECT_EQ(j["halt"]["fold"], 0);
  EXPECT_EQ(j["halt"]["step"], 1);
  EXPECT_EQ(j["entry"]["slot"], 17);
  EXPECT_EQ(j["entry"]["name"], "aux_pred_nb");
  EXPECT_EQ(j["entry"]["fold"], 0);
  EXPECT_EQ(j["entry"]["step"], 1);
  EXPECT_EQ(j["backward_entry"]["stage"], "aux");
  EXPECT_EQ(j["backward_entry"]["slot"], 34);
  ASSERT_EQ(j["folds"].size(), 1u);
  const auto& f = j["folds"][0];
  for (const char* k : {"fold", "steps"}) EXPECT_TRUE(f[k].is_number_integer()) << k;
  for (const char* k : {"loss_first", "loss_last", "c51_first", "c51_last"})
    EXPECT_TRUE(f[k].is_number() || f[k].is_null()) << k;  // JSON has no NaN: null stands for it
  ASSERT_EQ(f["slots"].size(), static_cast<std::size_t>(kBuiltinSlotCount));
  for (int i = 0; i < kBuiltinSlotCount; ++i) {
    const auto& s = f["slots"][i];
    EXPECT_EQ(s["index"], i);
    EXPECT_TRUE(s["name"].is_string());
    EXPECT_TRUE(s["kinds"].is_array());
    EXPECT_TRUE(s["first_step"].is_number_integer());
    EXPECT_TRUE(s["count"].is_number_integer());
  }
  EXPECT_EQ(f["slots"][17]["state"], "fired");
  EXPECT_EQ(f["slots"][17]["first_step"], 1);
  EXPECT_EQ(f["slots"][33]["state"], "clean");
  EXPECT_EQ(f["slots"][33]["first_step"], -1);
  EXPECT_EQ(f["slots"][33]["count"], 0);
  EXPECT_EQ(f["slots"][31]["state"], "deferred");

  auto healthy = run_stdout("--backend cpu --json " + kSmall);
  ASSERT_EQ(healthy.code, 0);
  auto h = nlohmann::json::parse(healthy.out);
  EXPECT_TRUE(h["halt"].is_null());
  EXPECT_TRUE(h["entry"].is_null());
  EXPECT_TRUE(h["backward_entry"].is_null());
}

TEST(Cli, ListingsAndBreakOnByName) {
  auto slots = run_stdout("--list-slots");
  EXPECT_EQ(slots.code, 0);
  EXPECT_NE(slots.out.find("0 batch sample active\n"), std::string::npos) << slots.out;
  EXPECT_NE(slots.out.find("31 ensemble_d_logits checks.post_backward deferred\n"),
            std::string::npos);
  EXPECT_NE(slots.out.find("35 bw_d_h_s2.iqn backward.iqn active\n"), std::string::npos);
  auto no_iqn = run_stdout("--list-slots --set loss.lambda_iqn=0");
  EXPECT_NE(no_iqn.out.find("14 iqn_quantiles forward absent\n"), std::string::npos) << no_iqn.out;
  auto params = run_stdout("--list-params");
  EXPECT_NE(params.out.find("encoder.w1 [24,256]\n"), std::string::npos) << params.out;
  EXPECT_NE(params.out.find("iqn.out.w [256,8]\n"), std::string::npos);
  auto sc = run_stdout("--list-scenarios");
  EXPECT_NE(sc.out.find("iqn-blowup: "), std::string::npos);
  auto br = run("--backend cpu --break-on aux_dh_s2_nb --inject slot:aux_dh_s2_nb@1:1 " + kSmall);
  EXPECT_EQ(br.code, 1) << br.out;
  EXPECT_NE(br.out.find("stopped: breakpoint at fold 1, step 1"), std::string::npos) << br.out;
  EXPECT_EQ(run("--backend cpu --break-on nonsense " + kSmall).code, 2);
  EXPECT_EQ(run("--backend cpu --inject slot:batch " + kSmall).code, 2);
  EXPECT_EQ(run("--backend cpu --scenario nope " + kSmall).code, 2);
  EXPECT_EQ(run("--backend cpu --graph off " + kSmall).code, 0);
  auto graph_on = run("--backend cpu --graph on " + kSmall);
  EXPECT_EQ(graph_on.code, 2);
  EXPECT_NE(graph_on.out.find("graph capture"), std::string::npos) << graph_on.out;
}

TEST(Cli, OutDirectoryRunFileDumpsAndForce) {
  auto dir = nanscope::test::temp_dir("cli_out");
  const std::string out = (dir / "run").string();
  auto r =
      run_stdout("--backend cpu --json --out " + out + " --inject slot:aux_loss@0:1 " + kSmall);
  ASSERT_EQ(r.code, 1);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["run_file"], out + "/run.h5");
  ASSERT_EQ(j["dumps"].size(), 1u);
  EXPECT_EQ(j["dumps"][0], out + "/dumps/fold000_step00000001_aux_loss.h5");
  EXPECT_TRUE(std::filesystem::exists(out + "/run.h5"));
  auto again = run("--backend cpu --out " + out + " " + kSmall);
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
  auto forced = run_stdout("--backend cpu --json --force --out " + out + " " + kSmall);
  EXPECT_EQ(forced.code, 0);
  EXPECT_FALSE(std::filesystem::exists(out + "/dumps/fold000_step00000001_aux_loss.h5"));
}

TEST(Cli, ReplayVerdictsAndBadDumps) {
  auto dir = nanscope::test::temp_dir("cli_replay");
  const std::string out = (dir / "run").string();
  run_stdout("--backend cpu --out " + out + " --inject param:encoder.w1@0:1 " + kSmall);
  auto r = run_stdout("replay --json " + out + "/dumps/fold000_step00000001_h_s1.h5");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["verdict"], "reproducible");
  EXPECT_EQ(j["backend"], "cpu");
  ASSERT_FALSE(j["slots"].empty());
  EXPECT_EQ(j["slots"][0]["name"], "h_s1");
  EXPECT_EQ(j["slots"][0]["dumped_kinds"], nlohmann::json::array({"nan"}));
  EXPECT_EQ(j["slots"][0]["replayed_kinds"], nlohmann::json::array({"nan"}));

  const std::string out2 = (dir / "run2").string();
  run_stdout("--backend cpu --out " + out2 + " --inject slot:q_expected@1:2:posinf " + kSmall);
  auto t = run_stdout("replay --json " + out2 + "/dumps/fold001_step00000002_q_expected.h5");
  ASSERT_EQ(t.code, 0) << t.out;
  const auto tj = nlohmann::json::parse(t.out);
  EXPECT_EQ(tj["verdict"], "transient");
  // The injection is in the dump's recorded config: replay names it, and makes it again on request
  // (the dumped step itself: every buffer bit for bit).
  EXPECT_EQ(tj["injections"], nlohmann::json::array({"slot:q_expected@1:2:posinf"}));
  EXPECT_EQ(tj["injections_replayed"], false);
  const std::string dump2 = out2 + "/dumps/fold001_step00000002_q_expected.h5";
  auto text = run("replay " + dump2);
  EXPECT_NE(
      text.out.find("recorded injection slot:q_expected@1:2:posinf: transient, not in the context"),
      std::string::npos)
      << text.out;
  EXPECT_NE(
      text.out.find(
          "verdict: transient (the step is clean when re-run without its recorded slot injection"),
      std::string::npos)
      << text.out;
  auto again = run_stdout("replay --with-injections --json " + dump2);
  ASSERT_EQ(again.code, 0) << again.out;
  const auto aj = nlohmann::json::parse(again.out);
  EXPECT_EQ(aj["verdict"], "reproducible");
  EXPECT_EQ(aj["injections_replayed"], true);
  ASSERT_FALSE(aj["slots"].empty());
  for (const auto& slot : aj["slots"]) {
    EXPECT_EQ(slot["buffer_equal"], true) << slot["name"];
    EXPECT_EQ(slot["buffer_differing"], 0) << slot["name"];
  }

  EXPECT_EQ(run("replay /nonexistent/dump.h5").code, 66);
  auto junk = nanscope::test::write_file(dir / "junk.h5", "not hdf5 at all");
  auto bad = run("replay " + junk);
  EXPECT_EQ(bad.code, 78);
  EXPECT_NE(bad.out.find("not an HDF5 file"), std::string::npos) << bad.out;
  EXPECT_EQ(run("replay").code, 2);
}

TEST(Cli, AWriteThatFailsMidwayExits74AndLeavesNoFile) {
  // No space left, simulated: a small file-size limit with SIGXFSZ ignored makes writes fail with
  // EFBIG, as a full disk makes them fail with ENOSPC.
  auto dir = nanscope::test::temp_dir("cli_efbig");
  const std::string out = (dir / "run").string();
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f 100; exec " +
                          std::string(NANSCOPE_RUN_BINARY) + " --backend cpu --out " + out +
                          " --inject slot:aux_loss@0:1 " + kSmall + "\" 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) text += buf.data();
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 74) << text;
  EXPECT_NE(text.find("fold000_step00000001_aux_loss.h5"), std::string::npos) << text;
  EXPECT_NE(text.find("File too large"), std::string::npos) << text;
  for (const auto& e : std::filesystem::directory_iterator(out + "/dumps"))
    ADD_FAILURE() << "left behind: " << e.path();
}

// `compare` on a run file: the default pair (last clean step, first bad one), the table, the JSON,
// and what it refuses: a fold or a step the file does not hold, a fold that fired at step 0, a
// file without slot health.
TEST(Cli, CompareNamesWhatGrewBetweenTheLastCleanAndTheFirstBadStep) {
  auto dir = nanscope::test::temp_dir("cli_compare");
  const std::string out = (dir / "run").string();
  ASSERT_EQ(
      run_stdout("--backend cpu --scenario lr-explosion --folds 1 --steps-per-fold 3 --out " + out)
          .code,
      1);  // something fired
  const std::string file = out + "/run.h5";
  auto j = run_stdout("compare " + file + " --fold 0 --json");
  ASSERT_EQ(j.code, 0) << j.out;
  const auto c = nlohmann::json::parse(j.out);
  EXPECT_EQ(c["fold"], 0);
  EXPECT_EQ(c["step_a"], 0);
  EXPECT_EQ(c["step_b"], 1);
  ASSERT_GE(c["rows"].size(), 30u);
  // The slots whose non-finite values are new at step 1 first, then the trunk that grew.
  std::size_t grown = 0;
  while (grown < c["rows"].size() && c["rows"][grown]["nonfinite_a"] == 0 &&
         c["rows"][grown]["nonfinite_b"].get<double>() > 0)
    ++grown;
  ASSERT_GT(grown, 0u);
  ASSERT_LT(grown, c["rows"].size());
  EXPECT_EQ(c["rows"][grown]["slot"], 2);
  EXPECT_EQ(c["rows"][grown]["name"], "h_s2");
  EXPECT_GT(c["rows"][grown]["growth"].get<double>(), 1e20);
  EXPECT_EQ(c["rows"][grown]["jumped"], true);
  for (const char* key : {"absmax_a", "absmax_b", "growth", "mean_a", "mean_b", "mean_change",
                          "nonfinite_a", "nonfinite_b", "jumped"})
    EXPECT_TRUE(c["rows"][0].contains(key)) << key;
  // A slot with no finite value left: growth and absmax_b are null, and it jumped.
  bool saw_nothing_finite = false;
  for (const auto& r : c["rows"])
    if (r["absmax_b"].is_null()) {
      saw_nothing_finite = true;
      EXPECT_TRUE(r["growth"].is_null());
      EXPECT_EQ(r["jumped"], true);
      EXPECT_GT(r["nonfinite_b"].get<std::int64_t>(), 0);
    }
  EXPECT_TRUE(saw_nothing_finite);
  auto text = run("compare " + file + " --fold 0 --steps 0 2");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("fold 0: step 0 vs step 2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("*  2 h_s2"), std::string::npos) << text.out;

  auto no_fold = run("compare " + file + " --fold 4");
  EXPECT_EQ(no_fold.code, 2);
  EXPECT_NE(no_fold.out.find("fold 4 ran no step"), std::string::npos) << no_fold.out;
  auto no_step = run("compare " + file + " --fold 0 --steps 0 9");
  EXPECT_EQ(no_step.code, 2);
  EXPECT_NE(no_step.out.find("fold 0 has no step 9 (it ran steps 0 to 2)"), std::string::npos)
      << no_step.out;
  EXPECT_EQ(run("compare " + file + " --fold 0 --steps 1").code, 2);
  EXPECT_EQ(run("compare /nonexistent/run.h5 --fold 0").code, 66);

  // Fired at step 0 (an injection there): no clean step before it, so --steps is asked for.
  const std::string out0 = (dir / "at0").string();
  run_stdout("--backend cpu --out " + out0 + " --inject slot:h_s1@0:0 " + kSmall);
  auto at0 = run("compare " + out0 + "/run.h5 --fold 0");
  EXPECT_EQ(at0.code, 2);
  EXPECT_NE(at0.out.find("fired at step 0"), std::string::npos) << at0.out;
  EXPECT_NE(at0.out.find("--steps A B"), std::string::npos) << at0.out;
  EXPECT_EQ(run("compare " + out0 + "/run.h5 --fold 0 --steps 0 1").code, 0);

  // sentinel.health off: nothing to compare, and it says why.
  const std::string off = (dir / "off").string();
  run_stdout("--backend cpu --out " + off + " --set sentinel.health=false " + kSmall);
  auto none = run("compare " + off + "/run.h5 --fold 1");
  EXPECT_EQ(none.code, 78);
  EXPECT_NE(none.out.find("sentinel.health off"), std::string::npos) << none.out;
}
