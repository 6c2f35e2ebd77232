#include "listings.h"

#include <fmt/format.h>

#include "core/sentinel.h"
#include "core/slot_table.h"
#include "model/param_layout.h"
#include "session/scenarios.h"

namespace nanscope::cli {

void list_slots(const Config& config) {
  // The state a slot starts the run in: "active" (checked; clean until it fires), or absent,
  // deferred or disabled with the reason.
  const SlotSetup setup = slot_setup(config);
  for (const auto& s : *SlotTable::builtin()) {
    const SlotState st = setup.state[s.index];
    fmt::print("{} {} {} {}\n", s.index, s.name, phase_name(s.phase),
               st == SlotState::Clean ? "active" : state_name(st));
  }
}

void list_slots_markdown() {
  fmt::print("| # | name | phase | call site | producer | buffer | rank | exists | consumers |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& s : *SlotTable::builtin()) fmt::print("{}\n", slot_markdown_row(s));
}

void list_params(const Config& config) {
  ParamLayout layout(Dims::from(config));
  for (const ParamEntry* e : layout.existing())
    fmt::print("{} [{}]\n", e->name, fmt::join(e->shape, ","));
}

void list_scenarios() {
  for (const auto& s : scenarios()) fmt::print("{}: {}\n", s.name, s.mechanism);
}

}  // namespace nanscope::cli
