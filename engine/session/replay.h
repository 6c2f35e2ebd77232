// Replay: re-runs a dumped step from its context (state before the step, batch, draws) on a
// fresh backend and says whether the non-finite values come back. `reproducible`: every slot that
// was non-finite in the dump is non-finite again (a bug in maths, data or weights); `transient`:
// some did not come back (a race, uninitialised memory, a hardware fault, an injected glitch).
// The injections the dumped step had are part of its recorded config: a slot injection is a
// transient fault, absent from the context, so a plain replay does not make it and says so; asked
// to, the replay makes it again, and then reproduces the dumped step itself (its buffers equal
// the dumped ones).
#pragma once

#include "core/enum_names.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "io/dump_file.h"
#include "model/backend.h"
#include "session/injection.h"

namespace nanscope {

// Reproducible: the step fires again from its recorded state and batch (a bug in the maths, the
// data or the weights); transient: it does not (a device fault, a race, a one-off injection).
enum class Verdict { Reproducible, Transient };
template <>
struct EnumNames<Verdict> {
  static constexpr std::array<std::string_view, 2> kNames = {"reproducible", "transient"};
};

// How a replayed slot buffer compares with the dumped one.
struct BufferMatch {
  bool bit_equal = false;       // every element's bits, NaN payloads included
  bool equal = false;           // every finite element's bits, the same elements NaN, +Inf, -Inf
  bool same_nonfinite = false;  // the same elements non-finite, with the same kinds
  std::int64_t differing = 0;   // elements whose bits differ
  double rel_error = 0;         // norm-wise relative error over the elements finite in both
};
BufferMatch compare_buffers(const std::vector<float>& dumped, const std::vector<float>& replayed);

struct ReplaySlot {
  int index = 0;
  std::uint8_t dumped_kinds = 0, replayed_kinds = 0;
  std::vector<float> replayed;  // the buffer as the replayed step's check saw it
  BufferMatch match;            // replayed vs dumped
};

struct ReplayResult {
  Verdict verdict = Verdict::Transient;
  std::vector<ReplaySlot> slots;
  StepFlags replayed_flags = StepFlags(kBuiltinSlotCount);
  // The injections recorded for the dumped step (its fold and step), and whether the replay made
  // the slot injections among them again. Parameter injections are in the dumped parameters.
  std::vector<Injection> injections;
  bool injections_replayed = false;
  bool slot_injection_recorded() const;
};

struct ReplayOptions {
  bool with_injections = false;  // make the dumped step's recorded slot injections again
};

// The config the dump was written with (its `config` attribute).
Config dump_config(const DumpData& dump);

// Runs the step on `backend` (built for dump_config(dump)).
ReplayResult replay_dump(const DumpData& dump, Backend& backend, ReplayOptions options = {});

}  // namespace nanscope
