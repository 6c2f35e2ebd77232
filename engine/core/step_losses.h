// A step's loss terms and gradient norms: one struct for the session's step record, the run file's
// step rows and the workbench's, described once by kLossTerms (each term's name in the run file and
// the metrics' CSV, its label in the plot, and its member), like kHealthFieldNames for health.
#pragma once

#include <array>
#include <limits>
#include <string_view>

#include "core/config.h"

namespace nanscope {

struct StepLosses {
  double total = 0, c51 = 0, mse = 0, cql = 0, iqn = 0, aux = 0, ens = 0;
  double grad_norm = 0;
  // The trainer's loss scale at the step (an SDK trainer's report, ns_loss_scale; NaN otherwise).
  double loss_scale = std::numeric_limits<double>::quiet_NaN();
  std::array<double, kGroupCount> group_norm{};  // per parameter group (kParamGroups)
};

struct LossTerm {
  std::string_view name;   // /steps/<name> in the run file
  std::string_view label;  // the metrics plot's series (the CSV column with '_' for ' ')
  double StepLosses::*member;
};

// In the metrics' order: the total loss, the terms, the global gradient norm, then the loss scale
// (the per-group norms follow them as /steps/group_norm [steps, groups]).
inline constexpr std::array<LossTerm, 9> kLossTerms = {{
    {"loss", "total loss", &StepLosses::total},
    {"c51", "c51", &StepLosses::c51},
    {"mse", "mse", &StepLosses::mse},
    {"cql", "cql", &StepLosses::cql},
    {"iqn", "iqn", &StepLosses::iqn},
    {"aux", "aux", &StepLosses::aux},
    {"ens", "ens", &StepLosses::ens},
    {"grad_norm", "grad norm", &StepLosses::grad_norm},
    {"loss_scale", "loss scale", &StepLosses::loss_scale},
}};
inline constexpr int kGradNormTerm = 7;   // kLossTerms' global gradient norm
inline constexpr int kLossScaleTerm = 8;  // kLossTerms' loss scale

}  // namespace nanscope
