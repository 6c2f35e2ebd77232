// --list-slots, --list-params, --list-scenarios: one line per item on stdout.
#pragma once

#include "core/config.h"

namespace nanscope::cli {

void list_slots(const Config& config);   // index name phase state
void list_slots_markdown();              // docs/slots.md's table, generated from the code
void list_params(const Config& config);  // name shape
void list_scenarios();                   // name: mechanism

}  // namespace nanscope::cli
