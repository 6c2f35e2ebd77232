// Reading, overriding, validating and writing the TOML config.
//
// Precedence, lowest first: the defaults in config.h, the config file, then each `--set KEY=VALUE`
// in order. Unknown keys and bad values are rejected with the key (and the file and line where
// there is one) named in the message.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace nanscope {

struct ConfigKeyInfo {
  std::string key;           // dotted, e.g. "loss.lambda_iqn"
  std::string type;          // "integer", "float", "boolean", "string"
  std::string default_text;  // the default as TOML text
  std::string doc;           // one line
};

// Every key the config accepts, in documentation order.
const std::vector<ConfigKeyInfo>& config_keys();

class ConfigBuilder {
 public:
  ConfigBuilder();
  ~ConfigBuilder();
  ConfigBuilder(const ConfigBuilder&) = delete;
  ConfigBuilder& operator=(const ConfigBuilder&) = delete;

  // Merges a TOML file; throws MissingInputError if absent, ConfigError on syntax errors.
  void load_file(const std::string& path);
  // Merges TOML text (used for scenario presets and tests); `origin` names it in errors.
  void load_text(const std::string& text, const std::string& origin);
  // Applies `KEY=VALUE`; VALUE is TOML (a bare word that is not TOML is taken as a string).
  void set(const std::string& assignment);
  // Checks every key and value and returns the resolved config.
  Config build() const;

 private:
  struct State;
  State* state_;
};

// The full resolved config as TOML text (stored in run files and dumps).
std::string to_toml(const Config& config);

}  // namespace nanscope
