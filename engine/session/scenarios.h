// Scenario presets: each switches on a real mechanism in the model or the data that produces a
// NaN (or a collapse) the way it happens in practice. A preset is a config fragment applied
// before the user's config file and flags.
#pragma once

#include <string>
#include <vector>

namespace nanscope {

struct Scenario {
  std::string name;
  std::string mechanism;  // one line, for --list-scenarios and the GUI
  std::string toml;       // the config keys it sets
};

const std::vector<Scenario>& scenarios();
const Scenario* find_scenario(const std::string& name);

}  // namespace nanscope
