#include "core/config_io.h"
#include "core/config_schema.h"
#include "core/slot_table.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <variant>

#include "core/errors.h"
#include "core/input_file.h"

namespace nanscope {

using namespace config_schema;

namespace {

struct Leaf {
  Value value;
  std::string origin;  // "FILE:LINE" or "--set"
};

bool is_table_prefix(const std::string& key) {
  for (const auto& s : specs())
    if (s.info.key.size() > key.size() && s.info.key.compare(0, key.size(), key) == 0 &&
        s.info.key[key.size()] == '.')
      return true;
  return false;
}

std::optional<Value> to_value(const toml::node& n) {
  if (auto v = n.as_integer()) return Value{v->get()};
  if (auto v = n.as_floating_point()) return Value{v->get()};
  if (auto v = n.as_boolean()) return Value{v->get()};
  if (auto v = n.as_string()) return Value{v->get()};
  if (auto arr = n.as_array()) {
    std::vector<std::int64_t> ints;
    std::vector<std::string> strings;
    for (const auto& e : *arr) {
      if (auto i = e.as_integer())
        ints.push_back(i->get());
      else if (auto str = e.as_string())
        strings.push_back(str->get());
      else
        return std::nullopt;
    }
    if (!ints.empty() && !strings.empty()) return std::nullopt;
    if (!strings.empty()) return Value{strings};
    return Value{ints};
  }
  return std::nullopt;
}

}  // namespace

const std::vector<ConfigKeyInfo>& config_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> out;
    for (const auto& s : specs()) out.push_back(s.info);
    return out;
  }();
  return keys;
}

struct ConfigBuilder::State {
  std::map<std::string, Leaf> leaves;

  void merge(const toml::table& table, const std::string& prefix, const std::string& origin) {
    for (const auto& [k, node] : table) {
      std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      std::string where = fmt::format("{}:{}", origin, node.source().begin.line);
      if (const auto* sub = node.as_table()) {
        if (!is_table_prefix(key))
          throw ConfigError(fmt::format("{}: unknown table '{}'", where, key));
        merge(*sub, key, origin);
        continue;
      }
      if (!find_spec(key)) {
        if (is_table_prefix(key))
          throw ConfigError(fmt::format("{}: key '{}' is a table, not a value", where, key));
        throw ConfigError(fmt::format("{}: unknown key '{}'", where, key));
      }
      auto v = to_value(node);
      if (!v) throw ConfigError(fmt::format("{}: key '{}': unsupported value type", where, key));
      leaves[key] = Leaf{*v, where};
    }
  }
};

ConfigBuilder::ConfigBuilder() : state_(new State) {}
ConfigBuilder::~ConfigBuilder() {
  delete state_;
}

void ConfigBuilder::load_text(const std::string& text, const std::string& origin) {
  toml::table table;
  try {
    table = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                  e.source().begin.column, e.description()));
  }
  state_->merge(table, "", origin);
}

void ConfigBuilder::load_file(const std::string& path) {
  check_input_file(path, "config file",
                   std::uintmax_t{16} << 20);  // 16 MiB of TOML is not a config
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("{}: cannot open config file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  load_text(ss.str(), path);
}

void ConfigBuilder::set(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(fmt::format("--set '{}': expected KEY=VALUE", assignment));
  std::string key = assignment.substr(0, eq);
  std::string value = assignment.substr(eq + 1);
  if (!find_spec(key)) throw ConfigError(fmt::format("--set: unknown key '{}'", key));
  Value v = std::string(value);  // a bare word that is not TOML is a string
  try {
    toml::table t = toml::parse("v = " + value);
    if (auto parsed = to_value(*t.get("v"))) v = *parsed;
  } catch (const toml::parse_error&) {
  }
  state_->leaves[key] = Leaf{v, "--set"};
}

Config ConfigBuilder::build() const {
  Config c;
  for (const auto& [key, leaf] : state_->leaves) find_spec(key)->read(c, leaf.value, leaf.origin);
  auto where = [&](const std::string& key) {
    auto it = state_->leaves.find(key);
    return it == state_->leaves.end() ? std::string("config") : it->second.origin;
  };
  if (c.model.v_min >= c.model.v_max)
    bad(where("model.v_max"), "model.v_max",
        fmt::format("must be greater than model.v_min ({} >= {})", c.model.v_min, c.model.v_max));
  if (c.data.garch_alpha + c.data.garch_beta >= 1.0)
    bad(where("data.garch_beta"), "data.garch_beta",
        "data.garch_alpha + data.garch_beta must be below 1 (stationary variance)");
  if (c.data.source == DataSource::Csv && c.data.csv.empty())
    bad(where("data.csv"), "data.csv", "is required when data.source = \"csv\"");
  if (c.data.corrupt_bar >= c.data.bars)
    bad(where("data.corrupt_bar"), "data.corrupt_bar",
        fmt::format("bar {} is beyond the series (data.bars = {})", c.data.corrupt_bar,
                    c.data.bars));
  for (int s : c.sentinel.undefer)
    if (!builtin_slot(s).starts_deferred)
      bad(where("sentinel.undefer"), "sentinel.undefer",
          fmt::format("slot {} is not deferred (only slot {} starts deferred)", s,
                      SlotTable::builtin()->deferred_text()));
  return c;
}

std::string to_toml(const Config& config) {
  toml::table root;
  for (const auto& s : specs()) s.write(config, root);
  std::ostringstream out;
  // Shortest readable floats (0.3, not 0.29999999999999999); values round-trip through build().
  out << toml::toml_formatter{root, toml::toml_formatter::default_flags |
                                        toml::format_flags::relaxed_float_precision}
      << "\n";
  return out.str();
}

}  // namespace nanscope
