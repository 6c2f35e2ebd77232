// nanscope-run as a user calls it: exit codes and what it prints.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "test_support.h"

namespace {

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
  std::string cmd = std::string(NANSCOPE_RUN_BINARY) + " " + args + " 2>&1";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kSmall =
    "--folds 2 --steps-per-fold 3 --set data.bars=400 --set model.batch=8 --set model.hidden=16 "
    "--set model.bottleneck=8 --set model.iqn_n=4 --set model.iqn_n_target=4 --set model.iqn_k=4 "
    "--set model.iqn_cos=8 --set model.aux_hidden=8";

}  // namespace

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
  EXPECT_EQ(run("--config /nonexistent/x.toml").code, 66);
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
