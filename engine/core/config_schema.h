// The config's keys, private to engine/core: each key's type, default, doc line, reader (with its
// validation) and writer, built from one template (config_schema.cpp). config_io.cpp parses TOML
// and --set into them and writes a Config back.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "core/config.h"
#include "core/config_io.h"

namespace nanscope::config_schema {

using Value = std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>,
                           std::vector<std::string>>;

std::string describe(const Value& v);

// One accepted key: how to read it into a Config (with validation) and how to write it back.
struct KeySpec {
  ConfigKeyInfo info;
  std::function<void(Config&, const Value&, const std::string& where)> read;
  std::function<void(const Config&, toml::table&)> write;
};

// Throws the ConfigError "WHERE: key 'KEY': WHAT".
[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& what);

// Every key, in documentation order; the one named `key` (nullptr: none).
const std::vector<KeySpec>& specs();
const KeySpec* find_spec(const std::string& key);

}  // namespace nanscope::config_schema
