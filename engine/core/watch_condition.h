// The watch conditions (docs/slots.md, "Watches") as the config, the JSON summary and the run
// file's /watches name them, and one trip of one.
#pragma once

#include "core/enum_names.h"

namespace nanscope {

enum class WatchCondition {
  Absmax,
  C51Mass,
  QuantileCrossing,
  CqlMargin,
  GradExplode,
  GradVanish,
  UpdateRatio,
  DeadRelu,
};
template <>
struct EnumNames<WatchCondition> {
  static constexpr std::array<std::string_view, 8> kNames = {
      "absmax",       "c51_mass",    "quantile_crossing", "cql_margin",
      "grad_explode", "grad_vanish", "update_ratio",      "dead_relu"};
};

struct WatchTrip {
  WatchCondition condition = WatchCondition::GradExplode;
  int slot = -1;   // the slot whose value tripped it (-1: none)
  int group = -1;  // the parameter group (-1: none)
  int fold = 0, step = 0;
  double value = 0, threshold = 0;
};

}  // namespace nanscope
