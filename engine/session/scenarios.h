// Scenario presets: each switches on a real mechanism in the model or the data that produces a
// NaN (or a collapse) the way it happens in practice. A preset is a config fragment applied
// before the user's config file and flags.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace nanscope {

struct Scenario {
  std::string name;
  std::string mechanism;  // one line, for --list-scenarios and the GUI
  std::string toml;       // the config keys it sets
};

const std::vector<Scenario>& scenarios();
const Scenario* find_scenario(const std::string& name);

// The config of a run, lowest precedence first: the defaults, the scenario preset (empty: none),
// the config file (empty: none), then each KEY=VALUE override in order. Throws UsageError for an
// unknown scenario and the config errors of ConfigBuilder.
Config resolve_config(const std::string& scenario, const std::string& config_file,
                      const std::vector<std::string>& sets);

}  // namespace nanscope
