// `nanscope-run run`: resolves the config, picks the backend, runs the folds, reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace nanscope::cli {

struct RunOptions {
  std::string config_file;
  std::string backend = "auto";
  std::optional<int> folds, steps_per_fold;
  std::optional<long long> seed;
  std::vector<std::string> sets;
  bool quiet = false;
};

// Returns the process exit code; throws nanscope::Error on bad input.
int run_command(const RunOptions& options);

}  // namespace nanscope::cli
