// Shared helpers for the unit tests: small configs and file helpers.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/config_io.h"
#include "core/errors.h"

namespace nanscope::test {

// A network small enough for finite differences, with every head present.
inline Config tiny_config(Precision precision = Precision::Float64) {
  Config c;
  c.run.folds = 2;
  c.run.steps_per_fold = 4;
  c.run.seed = 7;
  c.data.bars = 400;
  c.model.batch = 5;
  c.model.hidden = 7;
  c.model.bottleneck = 6;
  c.model.atoms = 11;
  c.model.iqn_n = 4;
  c.model.iqn_n_target = 3;
  c.model.iqn_k = 4;
  c.model.iqn_cos = 5;
  c.model.ensemble = 2;
  c.model.aux_hidden = 6;
  c.model.precision = precision;
  return c;
}

// `c` with `sets` applied (KEY=VALUE, as --set), validated as a config file would be.
inline Config with(Config c, const std::vector<std::string>& sets) {
  ConfigBuilder b;
  b.load_text(to_toml(c), "test");
  for (const auto& s : sets) b.set(s);
  return b.build();
}

// A fresh directory per name and process: CTest runs tests in parallel processes.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("nanscope_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline std::string write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

// The message of the nanscope::Error that `f` throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace nanscope::test
