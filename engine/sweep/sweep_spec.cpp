#include "sweep/sweep_spec.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/input_file.h"
#include "session/injection.h"
#include "session/scenarios.h"

namespace nanscope {

namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& key, const std::string& what) {
  throw ConfigError(fmt::format("{}: key '{}': {}", origin, key, what));
}

bool name_like(const std::string& s) {
  return !s.empty() && s.size() <= 64 && s[0] != '.' &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '-' || c == '_' || c == '.';
         });
}

std::string text_of(const toml::node* n, const std::string& origin, const std::string& key,
                    const std::string& fallback) {
  if (!n) return fallback;
  if (!n->is_string()) bad(origin, key, "must be a string");
  return **n->as_string();
}

std::vector<std::string> strings_of(const toml::node* n, const std::string& origin,
                                    const std::string& key) {
  std::vector<std::string> out;
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) bad(origin, key, "must be an array of strings");
  for (const toml::node& e : *a) {
    if (!e.is_string()) bad(origin, key, "must be an array of strings");
    out.push_back(**e.as_string());
  }
  return out;
}

int int_of(const toml::node* n, const std::string& origin, const std::string& key, int lo, int hi,
           int fallback) {
  if (!n) return fallback;
  const auto* v = n->as_integer();  // value<int64_t>() would convert a float, out of range or not
  if (!v || v->get() < lo || v->get() > hi)
    bad(origin, key, fmt::format("must be an integer in [{}, {}]", lo, hi));
  return static_cast<int>(v->get());
}

// A variant's run config, resolved as the task will resolve it: every override and injection
// checked before anything is submitted.
void check_variant(const SweepSpec& s, const SweepVariant& v, const std::string& origin) {
  const std::string scenario = v.scenario.empty() ? s.scenario : v.scenario;
  if (!find_scenario(scenario))
    bad(origin, "variant." + v.name + ".scenario",
        fmt::format("no scenario '{}' (see --list-scenarios)", scenario));
  std::vector<std::string> sets = s.sets;
  sets.insert(sets.end(), v.sets.begin(), v.sets.end());
  for (const std::string& kv : v.sets)
    if (kv.rfind("run.seed", 0) == 0)
      bad(origin, "variant." + v.name + ".set",
          "run.seed is the sweep's (sweep.seeds), not a variant's");
  Config config;
  try {
    config = resolve_config(scenario, "", sets);
  } catch (const ConfigError& e) {
    bad(origin, "variant." + v.name + ".set", e.what());
  }
  for (const std::string& spec : v.injections) {
    Injection inj;
    try {
      inj = parse_injection(spec);
    } catch (const UsageError& e) {
      bad(origin, "variant." + v.name + ".inject", e.what());
    }
    if (inj.fold >= config.run.folds || inj.step >= config.run.steps_per_fold)
      bad(origin, "variant." + v.name + ".inject",
          fmt::format("'{}': fold {} step {} is beyond the run ({} folds of {} steps)", spec,
                      inj.fold, inj.step, config.run.folds, config.run.steps_per_fold));
  }
}

}  // namespace

SweepSpec parse_sweep_spec(const std::string& text, const std::string& origin) {
  toml::table t;
  try {
    t = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}:{}: {}", origin, e.source().begin.line, e.description()));
  }
  static const std::set<std::string> kTop = {"sweep", "variant", "slurm", "local"};
  for (const auto& [k, _] : t)
    if (!kTop.count(std::string(k.str())))
      bad(origin, std::string(k.str()), "unknown section (sweep, variant, slurm, local)");
  SweepSpec s;
  const toml::table* sw = t["sweep"].as_table();
  if (!sw) bad(origin, "sweep", "the [sweep] table is missing");
  static const std::set<std::string> kSweep = {"name", "seeds", "scenario", "backend", "set"};
  for (const auto& [k, _] : *sw)
    if (!kSweep.count(std::string(k.str())))
      bad(origin, "sweep." + std::string(k.str()),
          "unknown key (name, seeds, scenario, backend, set)");
  s.name = text_of(sw->get("name"), origin, "sweep.name", "");
  if (!name_like(s.name)) bad(origin, "sweep.name", "1-64 letters, digits, '-', '_' or '.'");
  const toml::array* seeds = (*sw)["seeds"].as_array();
  if (!seeds || seeds->empty()) bad(origin, "sweep.seeds", "a non-empty array of seeds");
  for (const toml::node& e : *seeds) {
    const auto* v = e.as_integer();
    if (!v || v->get() < 0) bad(origin, "sweep.seeds", "seeds are integers >= 0");
    const auto seed = static_cast<std::uint64_t>(v->get());
    if (std::count(s.seeds.begin(), s.seeds.end(), seed))
      bad(origin, "sweep.seeds", fmt::format("seed {} is listed twice", seed));
    s.seeds.push_back(seed);
  }
  s.scenario = text_of(sw->get("scenario"), origin, "sweep.scenario", "healthy");
  const auto backend =
      parse_enum<BackendChoice>(text_of(sw->get("backend"), origin, "sweep.backend", "auto"));
  if (!backend) bad(origin, "sweep.backend", "auto, cpu or cuda");
  s.backend = *backend;
  s.sets = strings_of(sw->get("set"), origin, "sweep.set");
  for (const std::string& kv : s.sets)
    if (kv.rfind("run.seed", 0) == 0) bad(origin, "sweep.set", "run.seed comes from sweep.seeds");
  try {  // the sweep's own overrides, before any variant's
    (void)resolve_config(s.scenario, "", s.sets);
  } catch (const ConfigError& e) {
    bad(origin, "sweep.set", e.what());
  } catch (const MissingInputError& e) {
    bad(origin, "sweep.scenario", e.what());
  }
  const toml::array* vs = t["variant"].as_array();
  if (!vs || vs->empty()) bad(origin, "variant", "at least one [[variant]] is needed");
  static const std::set<std::string> kVariant = {"name", "scenario", "set", "inject"};
  for (const toml::node& n : *vs) {
    const toml::table* v = n.as_table();
    if (!v) bad(origin, "variant", "each [[variant]] is a table");
    SweepVariant out;
    const std::string which = fmt::format("variant.name (variant #{})", s.variants.size() + 1);
    out.name = text_of(v->get("name"), origin, which, "");
    if (!name_like(out.name))
      bad(origin, which, "1-64 letters, digits, '-', '_' or '.', not starting with '.'");
    for (const SweepVariant& other : s.variants)
      if (other.name == out.name)
        bad(origin, "variant.name", fmt::format("'{}' is named twice", out.name));
    for (const auto& [k, _] : *v)
      if (!kVariant.count(std::string(k.str())))
        bad(origin, "variant." + out.name + "." + std::string(k.str()),
            "unknown key (name, scenario, set, inject)");
    out.scenario = text_of(v->get("scenario"), origin, "variant." + out.name + ".scenario", "");
    out.sets = strings_of(v->get("set"), origin, "variant." + out.name + ".set");
    out.injections = strings_of(v->get("inject"), origin, "variant." + out.name + ".inject");
    s.variants.push_back(std::move(out));
  }
  if (const toml::table* sl = t["slurm"].as_table()) {
    static const std::set<std::string> kSlurm = {"partition",   "time",    "gres",
                                                 "concurrency", "requeue", "extra"};
    for (const auto& [k, _] : *sl)
      if (!kSlurm.count(std::string(k.str())))
        bad(origin, "slurm." + std::string(k.str()),
            "unknown key (partition, time, gres, concurrency, requeue, extra)");
    s.slurm.partition = text_of(sl->get("partition"), origin, "slurm.partition", "");
    s.slurm.time = text_of(sl->get("time"), origin, "slurm.time", "");
    s.slurm.gres = text_of(sl->get("gres"), origin, "slurm.gres", "");
    s.slurm.concurrency = int_of(sl->get("concurrency"), origin, "slurm.concurrency", 0, 100000, 0);
    if (const toml::node* r = sl->get("requeue")) {
      if (!r->is_boolean()) bad(origin, "slurm.requeue", "must be true or false");
      s.slurm.requeue = **r->as_boolean();
    }
    s.slurm.extra = strings_of(sl->get("extra"), origin, "slurm.extra");
    for (const std::string& e : s.slurm.extra)
      if (e.rfind("--", 0) != 0 || e.find_first_of("\n\r\t \"'") != std::string::npos)
        bad(origin, "slurm.extra", fmt::format("'{}' is not one sbatch option (--name=value)", e));
    for (const std::string* v : {&s.slurm.partition, &s.slurm.time, &s.slurm.gres})
      if (v->find_first_of("\n \t") != std::string::npos)
        bad(origin, "slurm", fmt::format("'{}' holds white space", *v));
  }
  if (const toml::table* lo = t["local"].as_table()) {
    for (const auto& [k, _] : *lo)
      if (std::string(k.str()) != "jobs")
        bad(origin, "local." + std::string(k.str()), "unknown key (jobs)");
    s.local_jobs = int_of(lo->get("jobs"), origin, "local.jobs", 0, 1024, 0);
  }
  for (const SweepVariant& v : s.variants) check_variant(s, v, origin);
  return s;
}

SweepSpec read_sweep_spec(const std::string& path) {
  check_input_file(path, "sweep spec", 1 << 20);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_sweep_spec(text.str(), path);
}

std::vector<SweepTask> sweep_tasks(const SweepSpec& spec) {
  std::vector<SweepTask> out;
  for (std::size_t v = 0; v < spec.variants.size(); ++v)
    for (std::size_t k = 0; k < spec.seeds.size(); ++k)
      out.push_back(SweepTask{static_cast<int>(out.size()), static_cast<int>(v), spec.seeds[k],
                              fmt::format("{}-seed{}", spec.variants[v].name, spec.seeds[k])});
  return out;
}

std::string sweep_spec_toml(const SweepSpec& s) {
  auto strings = [](const std::vector<std::string>& v) {
    toml::array a;
    for (const auto& x : v) a.push_back(x);
    return a;
  };
  toml::table root;
  toml::array seeds;
  for (auto x : s.seeds) seeds.push_back(static_cast<std::int64_t>(x));
  root.insert("sweep", toml::table{{"name", s.name},
                                   {"seeds", seeds},
                                   {"scenario", s.scenario},
                                   {"backend", std::string(name_of(s.backend))},
                                   {"set", strings(s.sets)}});
  toml::array variants;
  for (const SweepVariant& v : s.variants) {
    toml::table t{{"name", v.name}, {"set", strings(v.sets)}, {"inject", strings(v.injections)}};
    if (!v.scenario.empty()) t.insert("scenario", v.scenario);
    variants.push_back(std::move(t));
  }
  root.insert("variant", std::move(variants));
  root.insert("slurm", toml::table{{"partition", s.slurm.partition},
                                   {"time", s.slurm.time},
                                   {"gres", s.slurm.gres},
                                   {"concurrency", s.slurm.concurrency},
                                   {"requeue", s.slurm.requeue},
                                   {"extra", strings(s.slurm.extra)}});
  root.insert("local", toml::table{{"jobs", s.local_jobs}});
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

}  // namespace nanscope
