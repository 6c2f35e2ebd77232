// The resolved run configuration. Every field has a key in the TOML schema (config_schema.cpp),
// a default here, and a line in docs/config.md (a test keeps the three in step).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace nanscope {

// The seven parameter groups of the trainer, named by their parameter prefixes.
inline constexpr std::array<const char*, 7> kParamGroups = {"encoder", "bottleneck", "value", "adv",
                                                            "ens",     "iqn",        "aux"};
inline constexpr int kGroupCount = static_cast<int>(kParamGroups.size());

// The config's choices, parsed once from the names the TOML spells (kNames, in enumerator order).
enum class DataSource { Synthetic, Csv };
enum class Precision { Float32, Float64 };
enum class C51Form { CrossEntropy, KlUnmasked };
enum class HaltOnFire { FoldEnd, Step, Never };
template <>
struct EnumNames<DataSource> {
  static constexpr std::array<std::string_view, 2> kNames = {"synthetic", "csv"};
};
template <>
struct EnumNames<Precision> {
  static constexpr std::array<std::string_view, 2> kNames = {"float32", "float64"};
};
template <>
struct EnumNames<C51Form> {
  static constexpr std::array<std::string_view, 2> kNames = {"cross_entropy", "kl_unmasked"};
};
template <>
struct EnumNames<HaltOnFire> {
  static constexpr std::array<std::string_view, 3> kNames = {"fold_end", "step", "never"};
};

struct RunConfig {
  int folds = 6;
  int steps_per_fold = 400;
  std::uint64_t seed = 1;
  bool reinit_per_fold = false;
};

struct DataConfig {
  DataSource source = DataSource::Synthetic;
  std::string csv;  // path, when source = csv
  int bars = 6000;  // synthetic series length
  bool keep_bad_rows = false;
  // Synthetic generator: GARCH(1,1) with Student-t innovations and rare jumps.
  double garch_omega = 2e-6;
  double garch_alpha = 0.08;
  double garch_beta = 0.90;
  double student_nu = 4.0;
  double jump_prob = 0.01;
  double jump_scale = 0.03;
  // Offline dataset.
  int n_step = 3;
  double reward_scale = 100.0;
  double cost = 0.0005;
  double behaviour_epsilon = 0.3;
  int corrupt_bar = -1;  // synthetic bar whose close is set to NaN (-1: none); needs keep_bad_rows
};

struct ModelConfig {
  int batch = 256;
  int hidden = 256;
  int bottleneck = 128;
  int atoms = 51;
  double v_min = -10.0;
  double v_max = 10.0;
  double gamma = 0.99;
  int iqn_n = 32;
  int iqn_n_target = 32;
  int iqn_k = 32;
  int iqn_cos = 64;
  double kappa = 1.0;
  int ensemble = 4;
  int aux_hidden = 128;
  Precision precision = Precision::Float32;  // CPU backend storage
};

struct LossConfig {
  double lambda_mse = 0.05;
  double alpha_cql = 0.1;
  double lambda_iqn = 0.5;
  double lambda_aux = 0.1;
  double lambda_ens = 0.25;
  // "cross_entropy": -sum m log p. "kl_unmasked": sum m (log m - log p) with no mask for m = 0,
  // the textbook KL written naively (0 * log 0 is NaN); same gradient.
  C51Form c51_form = C51Form::CrossEntropy;
};

struct InitConfig {
  double iqn_out_scale = 1.0;  // multiplies the initial iqn.out.w
  double encoder_bias = 0.0;   // initial value of encoder.b1 and encoder.b2
};

struct SentinelConfig {
  std::vector<int> undefer;   // slots taken out of the deferred state
  std::vector<int> disabled;  // slots whose checks are off
  bool health = true;         // every checked slot's health per step (core/slot_health.h)
};

struct HaltConfig {
  HaltOnFire on_fire = HaltOnFire::FoldEnd;
  double collapse_eps = 1e-8;
  int collapse_patience = 50;
  int collapse_group = 0;  // index into kParamGroups
  bool on_watch = false;   // halt after the first step in which a watch condition tripped
};

// Watch conditions (docs/config.md, [watch]): each a threshold; 0 turns it off.
struct WatchConfig {
  double absmax = 1e30;             // a slot's finite absolute maximum above this
  double c51_mass = 0;              // a C51 probability row's mass off 1 by more than this
  double quantile_crossing = 0;     // the fraction of IQN quantile pairs out of order above this
  double cql_margin = 0;            // the largest Q within this many decades of float overflow
  double grad_explode = 0;          // a parameter group's gradient norm above this
  double grad_vanish = 0;           // a parameter group's gradient norm below this
  double update_ratio_floor = 0;    // a group's update norm over its weight norm below this
  double update_ratio_ceiling = 0;  // ... or above this
  double dead_relu = 0;             // the fraction of exact zeros in h_s1 or h_s2 above this
  // A slot's largest finite |value| within this factor of its type's largest finite value.
  double overflow_margin = 0;
  double underflow_share =
      0;           // a slot's share of values below its type's smallest normal above this
  int warmup = 0;  // a fold's first steps, in which no condition is evaluated
  // What the step must compute for them beyond the slots' health.
  bool needs_learner_metrics() const { return c51_mass > 0 || quantile_crossing > 0; }
  bool needs_update_norms() const { return update_ratio_floor > 0 || update_ratio_ceiling > 0; }
};

struct GuardConfig {
  bool enabled = false;
};

// Time travel (docs/files.md, "Checkpoints"): the trainer's state kept every `checkpoint_every`
// steps of each fold, within `memory_mb`, so that any step can be recomputed bit for bit.
struct HistoryConfig {
  int checkpoint_every = 100;  // 0 turns checkpoints off
  int memory_mb = 256;         // the ring's budget; the oldest checkpoints go first
  bool in_run_file = false;    // also write them into the run file (/checkpoints)
};

struct InjectConfig {
  std::vector<std::string> faults;  // TARGET@FOLD:STEP[:KIND[:ELEMENT]], as --inject
};

struct OptimConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double max_grad_norm = 10.0;
  int target_sync = 20;
  std::array<double, kGroupCount> lr_mult = {1, 1, 1, 1, 1, 1, 1};  // per parameter group
};

struct Config {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  LossConfig loss;
  OptimConfig optim;
  InitConfig init;
  SentinelConfig sentinel;
  HaltConfig halt;
  GuardConfig guard;
  InjectConfig inject;
  WatchConfig watch;
  HistoryConfig history;

  bool iqn_enabled() const { return loss.lambda_iqn != 0.0; }
};

}  // namespace nanscope
