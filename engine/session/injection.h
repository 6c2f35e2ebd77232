// Fault injection: NaN, +Inf or -Inf written into a slot's buffer (transient: right after its
// producer, at one step) or into a parameter (persistent: at the start of a step, until the
// optimizer changes it). Grammar (README.md, "nanscope-run"): TARGET@FOLD:STEP[:KIND[:ELEMENT]]
// with TARGET slot:NAME, slot:INDEX or param:NAME; KIND nan (default), posinf, neginf; ELEMENT a
// flat index (default 0) or `all`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nanscope {

struct Injection {
  enum class Target { Slot, Param };
  Target target = Target::Slot;
  int slot = -1;      // when Target::Slot
  std::string param;  // when Target::Param
  int fold = 0, step = 0;
  std::uint8_t kind = 1;               // KindBits: 1 NaN, 2 +Inf, 4 -Inf
  std::optional<std::size_t> element;  // nullopt: every element
  std::string spec;                    // the text it was parsed from

  double value() const;  // the non-finite value written
};

// Throws UsageError naming the spec and what is wrong with it.
Injection parse_injection(const std::string& spec);

}  // namespace nanscope
