// The watch conditions (docs/slots.md, "Watches") as the config, the JSON summary and the run
// file's /watches name them, and one trip of one.
#pragma once

#include <string>

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
  OverflowMargin,  // a slot within a factor of its type's largest finite value
  UnderflowShare,  // a slot's share of values below its type's smallest normal
  LossScaleFloor,  // the trainer's loss scale below a floor (an SDK trainer's report)
};
template <>
struct EnumNames<WatchCondition> {
  static constexpr std::array<std::string_view, 11> kNames = {
      "absmax",          "c51_mass",        "quantile_crossing", "cql_margin",
      "grad_explode",    "grad_vanish",     "update_ratio",      "dead_relu",
      "overflow_margin", "underflow_share", "loss_scale_floor"};
};

struct WatchTrip {
  WatchCondition condition = WatchCondition::GradExplode;
  int slot = -1;   // the slot whose value tripped it (-1: none)
  int group = -1;  // the parameter group (-1: none)
  int fold = 0, step = 0;
  double value = 0, threshold = 0;
};

// What tripped, as the CLI and the workbench say it: "group encoder" or "slot 13 iqn_phi".
std::string watch_target_text(const WatchTrip& t);
// "grad_explode on group adv: 1520 against 1000", "absmax on slot 2 h_s2: 3.2e+27 against 1e+06";
// without the slot where the reader sees it already ("absmax: 3.2e+27 against 1e+06").
std::string watch_trip_text(const WatchTrip& t, bool name_slot = true);

}  // namespace nanscope
