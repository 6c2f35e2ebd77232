// nanscope-run as a user calls it, for the CLI tests: the built binary run through a shell in a
// scratch directory, its exit code and what it printed.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "test_support.h"

namespace nanscope::test::cli {

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

// Every run starts in a scratch directory, so default output directories land there.
inline std::string in_scratch() {
  static const std::string dir = nanscope::test::temp_dir("cli_cwd").string();
  return "cd " + dir + " && ";
}

// Runs nanscope-run with `args` in the scratch directory, after the environment assignments `env`
// ("NAME=value ..."); stderr is kept with stdout or dropped.
inline Result run_capture(const std::string& args, bool with_stderr, const std::string& env = "") {
  std::string cmd = in_scratch() + env + " " + std::string(NANSCOPE_RUN_BINARY) + " " + args +
                    (with_stderr ? " 2>&1" : " 2>/dev/null");
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
inline Result run(const std::string& args) {
  return run_capture(args, true);
}
inline Result run_stdout(const std::string& args) {
  return run_capture(args, false);
}
inline Result run_env(const std::string& env, const std::string& args) {
  return run_capture(args, true, env);
}

inline const std::string kSmall =
    "--folds 2 --steps-per-fold 3 --set data.bars=400 --set model.batch=8 --set model.hidden=16 "
    "--set model.bottleneck=8 --set model.iqn_n=4 --set model.iqn_n_target=4 --set model.iqn_k=4 "
    "--set model.iqn_cos=8 --set model.aux_hidden=8";

}  // namespace nanscope::test::cli
