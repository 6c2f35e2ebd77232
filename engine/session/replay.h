// Replay: re-runs a dumped step from its context (state before the step, batch, draws) on a
// fresh backend and says whether the non-finite values come back. `reproducible`: every slot that
// was non-finite in the dump is non-finite again (a bug in maths, data or weights); `transient`:
// some did not come back (a race, uninitialised memory, a hardware fault, an injected glitch).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "io/dump_file.h"
#include "model/backend.h"

namespace nanscope {

struct ReplaySlot {
  int index = 0;
  std::uint8_t dumped_kinds = 0, replayed_kinds = 0;
};

struct ReplayResult {
  std::string verdict;  // "reproducible" or "transient"
  std::vector<ReplaySlot> slots;
  std::array<std::uint8_t, kSlotCount> replayed_flags{};
};

// The config the dump was written with (its `config` attribute).
Config dump_config(const DumpData& dump);

// Runs the step on `backend` (built for dump_config(dump)).
ReplayResult replay_dump(const DumpData& dump, Backend& backend);

}  // namespace nanscope
