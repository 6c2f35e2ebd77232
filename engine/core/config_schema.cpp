#include "core/config_schema.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "core/errors.h"
#include "core/slot_table.h"

namespace nanscope::config_schema {

std::string describe(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>)
          return fmt::format("string \"{}\"", x);
        else if constexpr (std::is_same_v<X, std::vector<std::int64_t>>)
          return fmt::format("[{}]", fmt::join(x, ", "));
        else if constexpr (std::is_same_v<X, std::vector<std::string>>)
          return fmt::format("[\"{}\"]", fmt::join(x, "\", \""));
        else if constexpr (std::is_same_v<X, bool>)
          return x ? "true" : "false";
        else
          return fmt::format("{}", x);
      },
      v);
}

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& what) {
  throw ConfigError(fmt::format("{}: key '{}': {}", where, key, what));
}

namespace {

toml::table& table_for(toml::table& root, const std::string& dotted, std::string& leaf) {
  toml::table* t = &root;
  std::size_t start = 0;
  for (std::size_t dot; (dot = dotted.find('.', start)) != std::string::npos; start = dot + 1) {
    std::string part = dotted.substr(start, dot - start);
    if (!t->contains(part)) t->insert(part, toml::table{});
    t = t->get_as<toml::table>(part);
  }
  leaf = dotted.substr(start);
  return *t;
}

template <class T>
void put(toml::table& root, const std::string& key, T v) {
  std::string leaf;
  table_for(root, key, leaf).insert_or_assign(leaf, v);
}

// Every key is this: an accessor of its field (a generic lambda, `[](auto& c) -> auto& { ... }`,
// so the same accessor reads a const Config), `parse` from a TOML value (throwing the key's error)
// and `emit` back to what the TOML table holds. The default's text is the emitted default.
// A default as docs/config.md shows it.
std::string default_text(std::int64_t x) {
  return std::to_string(x);
}
std::string default_text(double x) {
  return fmt::format("{}", x);
}
std::string default_text(bool x) {
  return x ? "true" : "false";
}
std::string default_text(const std::string& x) {
  return fmt::format("\"{}\"", x);
}
std::string default_text(const toml::array& a) {
  return a.empty() ? "[]" : "[...]";
}

// Every key is this: an accessor of its field (a generic lambda, `[](auto& c) -> auto& { ... }`,
// so the same accessor reads a const Config), `parse` from a TOML value (throwing the key's error)
// and `emit` back to what the TOML table holds.
template <class Ref, class Parse, class Emit>
KeySpec make_key(std::string key, std::string type, std::string doc, Ref ref, Parse parse,
                 Emit emit) {
  static const Config defaults;
  KeySpec s;
  s.info = {key, std::move(type), default_text(emit(ref(defaults))), std::move(doc)};
  s.read = [key, ref, parse](Config& c, const Value& v, const std::string& where) {
    ref(c) = parse(v, where, key);
  };
  s.write = [key, ref, emit](const Config& c, toml::table& t) { put(t, key, emit(ref(c))); };
  return s;
}

template <class Ref>
KeySpec int_key(std::string key, std::string doc, Ref ref, std::int64_t lo, std::int64_t hi) {
  auto parse = [lo, hi](const Value& v, const std::string& where, const std::string& key) {
    auto* i = std::get_if<std::int64_t>(&v);
    if (!i) bad(where, key, fmt::format("must be an integer (got {})", describe(v)));
    if (*i < lo || *i > hi)
      bad(where, key, fmt::format("must be in [{}, {}] (got {})", lo, hi, *i));
    return static_cast<int>(*i);
  };
  return make_key(std::move(key), "integer", std::move(doc), ref, parse,
                  [](int x) { return static_cast<std::int64_t>(x); });
}

template <class Ref>
KeySpec float_key(std::string key, std::string doc, Ref ref, double lo, double hi,
                  bool lo_open = false) {
  auto parse = [lo, hi, lo_open](const Value& v, const std::string& where, const std::string& key) {
    double x;
    if (auto* i = std::get_if<std::int64_t>(&v))
      x = static_cast<double>(*i);
    else if (auto* d = std::get_if<double>(&v))
      x = *d;
    else
      bad(where, key, fmt::format("must be a number (got {})", describe(v)));
    if (!std::isfinite(x)) bad(where, key, fmt::format("must be finite (got {})", x));
    if (x < lo || x > hi || (lo_open && x == lo))
      bad(where, key, fmt::format("must be in {}{}, {}] (got {})", lo_open ? "(" : "[", lo, hi, x));
    return x;
  };
  return make_key(std::move(key), "float", std::move(doc), ref, parse, [](double x) { return x; });
}

template <class Ref>
KeySpec bool_key(std::string key, std::string doc, Ref ref) {
  auto parse = [](const Value& v, const std::string& where, const std::string& key) {
    auto* b = std::get_if<bool>(&v);
    if (!b) bad(where, key, fmt::format("must be true or false (got {})", describe(v)));
    return *b;
  };
  return make_key(std::move(key), "boolean", std::move(doc), ref, parse, [](bool x) { return x; });
}

std::string string_value(const Value& v, const std::string& where, const std::string& key) {
  auto* str = std::get_if<std::string>(&v);
  if (!str) bad(where, key, fmt::format("must be a string (got {})", describe(v)));
  return *str;
}

template <class Ref>
KeySpec string_key(std::string key, std::string doc, Ref ref) {
  return make_key(std::move(key), "string", std::move(doc), ref, string_value,
                  [](const std::string& x) { return x; });
}

// A string naming one of `names` (in the TOML), held as its index: an enum or a group index.
template <class T, std::size_t N, class Ref>
KeySpec choice_key(std::string key, std::string doc, Ref ref,
                   const std::array<std::string_view, N>& names) {
  auto parse = [names](const Value& v, const std::string& where, const std::string& key) {
    const std::string str = string_value(v, where, key);
    for (std::size_t i = 0; i < N; ++i)
      if (names[i] == str) return static_cast<T>(i);
    bad(where, key, fmt::format("must be one of {} (got \"{}\")", fmt::join(names, ", "), str));
  };
  return make_key(std::move(key), "string", std::move(doc), ref, parse,
                  [names](T x) { return std::string(names[static_cast<std::size_t>(x)]); });
}

template <class E, class Ref>
KeySpec enum_key(std::string key, std::string doc, Ref ref) {
  return choice_key<E>(std::move(key), std::move(doc), ref, EnumNames<E>::kNames);
}

// A list of slot indices of nanscope's own trainer, each in [0, kBuiltinSlotCount).
template <class Ref>
KeySpec slot_list_key(std::string key, std::string doc, Ref ref) {
  auto parse = [](const Value& v, const std::string& where, const std::string& key) {
    std::vector<std::int64_t> list;
    if (auto* l = std::get_if<std::vector<std::int64_t>>(&v))
      list = *l;
    else if (auto* one = std::get_if<std::int64_t>(&v))
      list = {*one};
    else if (auto* str = std::get_if<std::vector<std::string>>(&v); str && str->empty())
      list = {};
    else
      bad(where, key, fmt::format("must be an array of slot indices (got {})", describe(v)));
    std::vector<int> out;
    for (auto i : list) {
      if (i < 0 || i >= kBuiltinSlotCount)
        bad(where, key, fmt::format("slot index {} is not in [0, {}]", i, kBuiltinSlotCount - 1));
      out.push_back(static_cast<int>(i));
    }
    return out;
  };
  auto emit = [](const std::vector<int>& x) {
    toml::array a;
    for (int i : x) a.push_back(static_cast<std::int64_t>(i));
    return a;
  };
  return make_key(std::move(key), "array of integers", std::move(doc), ref, parse, emit);
}

template <class Ref>
KeySpec string_list_key(std::string key, std::string doc, Ref ref) {
  auto parse = [](const Value& v, const std::string& where,
                  const std::string& key) -> std::vector<std::string> {
    if (auto* l = std::get_if<std::vector<std::string>>(&v)) return *l;
    if (auto* one = std::get_if<std::string>(&v)) return {*one};
    if (auto* e = std::get_if<std::vector<std::int64_t>>(&v); e && e->empty()) return {};
    bad(where, key, fmt::format("must be an array of strings (got {})", describe(v)));
  };
  auto emit = [](const std::vector<std::string>& x) {
    toml::array a;
    for (const auto& s : x) a.push_back(s);
    return a;
  };
  return make_key(std::move(key), "array of strings", std::move(doc), ref, parse, emit);
}

constexpr double kInf = std::numeric_limits<double>::max();
constexpr auto kGroupNames = [] {
  std::array<std::string_view, kGroupCount> n{};
  for (int g = 0; g < kGroupCount; ++g)
    n[static_cast<std::size_t>(g)] = kParamGroups[static_cast<std::size_t>(g)];
  return n;
}();
constexpr std::int64_t kBig = 1'000'000'000;

std::vector<KeySpec> build_specs() {
  std::vector<KeySpec> k;
  // [run]
  k.push_back(int_key(
      "run.folds", "number of walk-forward folds", [](auto& c) -> auto& { return c.run.folds; }, 1,
      100000));
  k.push_back(int_key(
      "run.steps_per_fold", "training steps per fold",
      [](auto& c) -> auto& { return c.run.steps_per_fold; }, 1, kBig));
  {
    KeySpec s;
    s.info = {"run.seed", "integer", "1",
              "seed of every random draw (data, init, batches, tau samples)"};
    s.read = [](Config& c, const Value& v, const std::string& where) {
      auto* i = std::get_if<std::int64_t>(&v);
      if (!i) bad(where, "run.seed", fmt::format("must be an integer (got {})", describe(v)));
      if (*i < 0) bad(where, "run.seed", fmt::format("must be >= 0 (got {})", *i));
      c.run.seed = static_cast<std::uint64_t>(*i);
    };
    s.write = [](const Config& c, toml::table& t) {
      put(t, "run.seed", static_cast<std::int64_t>(c.run.seed));
    };
    k.push_back(std::move(s));
  }
  k.push_back(bool_key(
      "run.reinit_per_fold",
      "re-initialise the network at every fold (default: weights carry over)",
      [](auto& c) -> auto& { return c.run.reinit_per_fold; }));
  // [data]
  k.push_back(enum_key<DataSource>(
      "data.source", "where bars come from: \"synthetic\" or \"csv\"",
      [](auto& c) -> auto& { return c.data.source; }));
  k.push_back(string_key(
      "data.csv", "CSV file (timestamp,open,high,low,close,volume) when data.source = \"csv\"",
      [](auto& c) -> auto& { return c.data.csv; }));
  k.push_back(int_key(
      "data.bars", "length of the synthetic bar series",
      [](auto& c) -> auto& { return c.data.bars; }, 16, kBig));
  k.push_back(bool_key(
      "data.keep_bad_rows", "keep non-finite bar values instead of rejecting the file",
      [](auto& c) -> auto& { return c.data.keep_bad_rows; }));
  k.push_back(float_key(
      "data.garch_omega", "GARCH(1,1) constant term of the variance",
      [](auto& c) -> auto& { return c.data.garch_omega; }, 0, 1, true));
  k.push_back(float_key(
      "data.garch_alpha", "GARCH(1,1) weight of the last squared return",
      [](auto& c) -> auto& { return c.data.garch_alpha; }, 0, 1));
  k.push_back(float_key(
      "data.garch_beta", "GARCH(1,1) weight of the last variance",
      [](auto& c) -> auto& { return c.data.garch_beta; }, 0, 1));
  k.push_back(float_key(
      "data.student_nu", "degrees of freedom of the Student-t innovations",
      [](auto& c) -> auto& { return c.data.student_nu; }, 2, 1e6, true));
  k.push_back(float_key(
      "data.jump_prob", "probability of a jump per bar",
      [](auto& c) -> auto& { return c.data.jump_prob; }, 0, 1));
  k.push_back(float_key(
      "data.jump_scale", "standard deviation of a jump's log return",
      [](auto& c) -> auto& { return c.data.jump_scale; }, 0, 10));
  k.push_back(int_key(
      "data.n_step", "n of the n-step return", [](auto& c) -> auto& { return c.data.n_step; }, 1,
      64));
  k.push_back(float_key(
      "data.reward_scale", "multiplies every reward",
      [](auto& c) -> auto& { return c.data.reward_scale; }, 0, 1e6, true));
  k.push_back(float_key(
      "data.cost", "transaction cost per unit of position change",
      [](auto& c) -> auto& { return c.data.cost; }, 0, 1));
  k.push_back(float_key(
      "data.behaviour_epsilon", "probability that the behaviour policy acts at random",
      [](auto& c) -> auto& { return c.data.behaviour_epsilon; }, 0, 1));
  k.push_back(int_key(
      "data.corrupt_bar",
      "synthetic bar whose close is set to NaN (-1: none; needs data.keep_bad_rows)",
      [](auto& c) -> auto& { return c.data.corrupt_bar; }, -1, kBig));
  // [model]
  k.push_back(int_key(
      "model.batch", "batch size B", [](auto& c) -> auto& { return c.model.batch; }, 1, 65536));
  k.push_back(int_key(
      "model.hidden", "trunk width H", [](auto& c) -> auto& { return c.model.hidden; }, 1, 16384));
  k.push_back(int_key(
      "model.bottleneck", "bottleneck width Z", [](auto& c) -> auto& { return c.model.bottleneck; },
      1, 16384));
  k.push_back(int_key(
      "model.atoms", "C51 atoms", [](auto& c) -> auto& { return c.model.atoms; }, 2, 1001));
  k.push_back(float_key(
      "model.v_min", "lowest atom of the C51 support",
      [](auto& c) -> auto& { return c.model.v_min; }, -1e6, 1e6));
  k.push_back(float_key(
      "model.v_max", "highest atom of the C51 support",
      [](auto& c) -> auto& { return c.model.v_max; }, -1e6, 1e6));
  k.push_back(float_key(
      "model.gamma", "discount factor", [](auto& c) -> auto& { return c.model.gamma; }, 0, 1,
      true));
  k.push_back(int_key(
      "model.iqn_n", "IQN quantile samples N (online, on s)",
      [](auto& c) -> auto& { return c.model.iqn_n; }, 1, 1024));
  k.push_back(int_key(
      "model.iqn_n_target", "IQN quantile samples N' (target, on s')",
      [](auto& c) -> auto& { return c.model.iqn_n_target; }, 1, 1024));
  k.push_back(int_key(
      "model.iqn_k", "IQN samples K for the greedy action on s'",
      [](auto& c) -> auto& { return c.model.iqn_k; }, 1, 1024));
  k.push_back(int_key(
      "model.iqn_cos", "IQN cosine features n_cos",
      [](auto& c) -> auto& { return c.model.iqn_cos; }, 1, 1024));
  k.push_back(float_key(
      "model.kappa", "quantile Huber threshold kappa",
      [](auto& c) -> auto& { return c.model.kappa; }, 0, 1e6, true));
  k.push_back(int_key(
      "model.ensemble", "ensemble value heads E", [](auto& c) -> auto& { return c.model.ensemble; },
      1, 64));
  k.push_back(int_key(
      "model.aux_hidden", "aux next-bar head hidden width",
      [](auto& c) -> auto& { return c.model.aux_hidden; }, 1, 16384));
  k.push_back(enum_key<Precision>(
      "model.precision", "CPU backend storage: \"float32\" (matches the GPU) or \"float64\"",
      [](auto& c) -> auto& { return c.model.precision; }));
  // [loss]
  k.push_back(float_key(
      "loss.lambda_mse", "weight of the expected-Q MSE term",
      [](auto& c) -> auto& { return c.loss.lambda_mse; }, 0, 1e6));
  k.push_back(float_key(
      "loss.alpha_cql", "weight alpha of the CQL term (inside the term)",
      [](auto& c) -> auto& { return c.loss.alpha_cql; }, 0, 1e6));
  k.push_back(float_key(
      "loss.lambda_iqn", "weight of the IQN loss; 0 removes the IQN head",
      [](auto& c) -> auto& { return c.loss.lambda_iqn; }, 0, 1e6));
  k.push_back(float_key(
      "loss.lambda_aux", "weight of the aux next-bar loss",
      [](auto& c) -> auto& { return c.loss.lambda_aux; }, 0, 1e6));
  k.push_back(float_key(
      "loss.lambda_ens", "weight of the ensemble cross-entropy",
      [](auto& c) -> auto& { return c.loss.lambda_ens; }, 0, 1e6));
  k.push_back(enum_key<C51Form>(
      "loss.c51_form",
      "\"cross_entropy\" (-sum m log p) or \"kl_unmasked\" (sum m (log m - log p), "
      "0 log 0 left unmasked)",
      [](auto& c) -> auto& { return c.loss.c51_form; }));
  // [optim]
  k.push_back(float_key(
      "optim.lr", "Adam learning rate", [](auto& c) -> auto& { return c.optim.lr; }, 0, 1e30,
      true));
  k.push_back(float_key(
      "optim.beta1", "Adam beta1", [](auto& c) -> auto& { return c.optim.beta1; }, 0, 0.999999));
  k.push_back(float_key(
      "optim.beta2", "Adam beta2", [](auto& c) -> auto& { return c.optim.beta2; }, 0, 0.999999999));
  k.push_back(float_key(
      "optim.eps", "Adam epsilon", [](auto& c) -> auto& { return c.optim.eps; }, 0, 1, true));
  k.push_back(float_key(
      "optim.max_grad_norm", "global gradient-norm clip; 0 turns clipping off",
      [](auto& c) -> auto& { return c.optim.max_grad_norm; }, 0, kInf));
  k.push_back(int_key(
      "optim.target_sync", "steps between target-network syncs",
      [](auto& c) -> auto& { return c.optim.target_sync; }, 1, kBig));
  for (int g = 0; g < kGroupCount; ++g) {
    std::string name = kParamGroups[g];
    k.push_back(float_key(
        "optim.lr_mult." + name, "learning-rate multiplier of the " + name + " parameter group",
        [g](auto& c) -> auto& { return c.optim.lr_mult[g]; }, 0, 1e38));
  }
  // [init]
  k.push_back(float_key(
      "init.iqn_out_scale", "multiplies the initial IQN output weights iqn.out.w",
      [](auto& c) -> auto& { return c.init.iqn_out_scale; }, 0, 1e40));
  k.push_back(float_key(
      "init.encoder_bias", "initial value of the encoder biases b1 and b2",
      [](auto& c) -> auto& { return c.init.encoder_bias; }, -1e30, 1e30));
  // [sentinel]
  k.push_back(slot_list_key(
      "sentinel.undefer", "slot indices taken out of the deferred state (slot 31 starts deferred)",
      [](auto& c) -> auto& { return c.sentinel.undefer; }));
  k.push_back(slot_list_key(
      "sentinel.disabled", "slot indices whose checks are turned off",
      [](auto& c) -> auto& { return c.sentinel.disabled; }));
  k.push_back(bool_key(
      "sentinel.health",
      "every checked slot's finite min, max, mean, rms, non-finite count and zero fraction per "
      "step (the health watches read them)",
      [](auto& c) -> auto& { return c.sentinel.health; }));
  // [halt]
  k.push_back(enum_key<HaltOnFire>(
      "halt.on_fire",
      "\"fold_end\": halt at the end of a fold in which anything fired; \"step\": "
      "after the first step in which anything fired; \"never\"",
      [](auto& c) -> auto& { return c.halt.on_fire; }));
  k.push_back(float_key(
      "halt.collapse_eps", "grad-collapse halt: the group's gradient norm stays below this",
      [](auto& c) -> auto& { return c.halt.collapse_eps; }, 0, kInf));
  k.push_back(int_key(
      "halt.collapse_patience",
      "grad-collapse halt: for this many consecutive steps (0 turns it off)",
      [](auto& c) -> auto& { return c.halt.collapse_patience; }, 0, kBig));
  k.push_back(choice_key<int>(
      "halt.collapse_group", "grad-collapse halt: the parameter group watched",
      [](auto& c) -> auto& { return c.halt.collapse_group; }, kGroupNames));
  k.push_back(bool_key(
      "halt.on_watch", "halt after the first step in which a watch condition tripped",
      [](auto& c) -> auto& { return c.halt.on_watch; }));
  // [guard]
  k.push_back(bool_key(
      "guard.enabled", "skip the optimizer update of any step in which a slot fired",
      [](auto& c) -> auto& { return c.guard.enabled; }));
  // [inject]
  k.push_back(string_list_key(
      "inject.faults", "fault injections, each TARGET@FOLD:STEP[:KIND[:ELEMENT]] as --inject",
      [](auto& c) -> auto& { return c.inject.faults; }));
  // [watch]
  k.push_back(float_key(
      "watch.absmax", "watch: a slot's finite absolute maximum above this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.absmax; }, 0, kInf));
  k.push_back(float_key(
      "watch.c51_mass",
      "watch: a C51 probability row (slots 6, 7, 8) whose mass differs from 1 by more than this "
      "(0 turns it off)",
      [](auto& c) -> auto& { return c.watch.c51_mass; }, 0, kInf));
  k.push_back(float_key(
      "watch.quantile_crossing",
      "watch: the fraction of IQN quantile pairs (slot 14) out of order for ordered taus above "
      "this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.quantile_crossing; }, 0, 1));
  k.push_back(float_key(
      "watch.cql_margin",
      "watch: the largest logit a logsumexp takes (value and advantage logits, slots 4 and 5; "
      "Q, slot 10) within this many decades of float overflow (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.cql_margin; }, 0, 39));
  k.push_back(float_key(
      "watch.grad_explode", "watch: a parameter group's gradient norm above this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.grad_explode; }, 0, kInf));
  k.push_back(float_key(
      "watch.grad_vanish", "watch: a parameter group's gradient norm below this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.grad_vanish; }, 0, kInf));
  k.push_back(float_key(
      "watch.update_ratio_floor",
      "watch: a parameter group's update norm over its weight norm below this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.update_ratio_floor; }, 0, kInf));
  k.push_back(float_key(
      "watch.update_ratio_ceiling",
      "watch: a parameter group's update norm over its weight norm above this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.update_ratio_ceiling; }, 0, kInf));
  k.push_back(float_key(
      "watch.dead_relu",
      "watch: the fraction of exact zeros in h_s1 or h_s2 above this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.dead_relu; }, 0, 1));
  k.push_back(float_key(
      "watch.overflow_margin",
      "watch: a slot's largest finite absolute value within this factor of its type's largest "
      "finite value (float32: 3.4e38; bfloat16: 3.39e38; float16: 65504), before it overflows to "
      "Inf (0 turns it off; a factor below 1 never trips)",
      [](auto& c) -> auto& { return c.watch.overflow_margin; }, 0, kInf));
  k.push_back(float_key(
      "watch.underflow_share",
      "watch: the fraction of a slot's values that are non-zero and below its type's smallest "
      "normal (subnormal: precision lost) above this (0 turns it off)",
      [](auto& c) -> auto& { return c.watch.underflow_share; }, 0, 1));
  k.push_back(int_key(
      "watch.warmup",
      "watch: a fold's first steps, in which no condition is evaluated (a freshly initialised "
      "learner's quantiles cross and its updates are large)",
      [](auto& c) -> auto& { return c.watch.warmup; }, 0, kBig));
  // [history]
  k.push_back(int_key(
      "history.checkpoint_every",
      "time travel: keep the trainer's state every this many steps of a fold, so that any step "
      "can be recomputed (0 turns it off)",
      [](auto& c) -> auto& { return c.history.checkpoint_every; }, 0, kBig));
  k.push_back(int_key(
      "history.memory_mb",
      "time travel: the checkpoints' budget in MiB (device memory on the CUDA backend); the "
      "oldest go first",
      [](auto& c) -> auto& { return c.history.memory_mb; }, 1, 1 << 20));
  k.push_back(bool_key(
      "history.in_run_file",
      "time travel: also write the checkpoints into the run file (/checkpoints), so that the "
      "file can be travelled offline",
      [](auto& c) -> auto& { return c.history.in_run_file; }));
  return k;
}

}  // namespace

const std::vector<KeySpec>& specs() {
  static const std::vector<KeySpec> s = build_specs();
  return s;
}

const KeySpec* find_spec(const std::string& key) {
  for (const auto& s : specs())
    if (s.info.key == key) return &s;
  return nullptr;
}

}  // namespace nanscope::config_schema
