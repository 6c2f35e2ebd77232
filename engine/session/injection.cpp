#include "session/injection.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <vector>

#include "core/errors.h"
#include "core/sentinel.h"
#include "core/slot_table.h"

namespace nanscope {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t p; (p = s.find(sep, start)) != std::string::npos; start = p + 1)
    out.push_back(s.substr(start, p - start));
  out.push_back(s.substr(start));
  return out;
}

template <class I>
bool parse_int(const std::string& s, I& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

double Injection::value() const {
  if (kind == kKindPosInf) return std::numeric_limits<double>::infinity();
  if (kind == kKindNegInf) return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

Injection parse_injection(const std::string& spec) {
  auto fail = [&](const std::string& what) {
    return UsageError(
        fmt::format("--inject '{}': {} (expected TARGET@FOLD:STEP[:KIND[:ELEMENT]], "
                    "TARGET slot:NAME, slot:INDEX or param:NAME)",
                    spec, what));
  };
  Injection inj;
  inj.spec = spec;
  const auto at = spec.rfind('@');
  if (at == std::string::npos) throw fail("missing '@'");
  const std::string target = spec.substr(0, at);
  if (target.rfind("slot:", 0) == 0) {
    auto slot = SlotTable::builtin()->find(target.substr(5));
    if (!slot) throw fail(fmt::format("unknown slot '{}'", target.substr(5)));
    inj.slot = *slot;
  } else if (target.rfind("param:", 0) == 0) {
    inj.target = Injection::Target::Param;
    inj.param = target.substr(6);
    if (inj.param.empty()) throw fail("empty parameter name");
  } else {
    throw fail(fmt::format("target '{}' must start with slot: or param:", target));
  }
  auto parts = split(spec.substr(at + 1), ':');
  if (parts.size() < 2 || parts.size() > 4) throw fail("expected FOLD:STEP[:KIND[:ELEMENT]]");
  if (!parse_int(parts[0], inj.fold) || inj.fold < 0)
    throw fail(fmt::format("bad fold '{}'", parts[0]));
  if (!parse_int(parts[1], inj.step) || inj.step < 0)
    throw fail(fmt::format("bad step '{}'", parts[1]));
  if (parts.size() >= 3) {
    // The kinds by the names kind_names() writes.
    inj.kind = 0;
    for (std::uint8_t bit : {kKindNaN, kKindPosInf, kKindNegInf})
      if (kind_names(bit).front() == parts[2]) inj.kind = bit;
    if (inj.kind == 0) throw fail(fmt::format("kind '{}' must be nan, posinf or neginf", parts[2]));
  }
  inj.element = 0;
  if (parts.size() == 4) {
    std::size_t e = 0;
    if (parts[3] == "all")
      inj.element.reset();
    else if (parse_int(parts[3], e))
      inj.element = e;
    else
      throw fail(fmt::format("element '{}' must be a flat index or 'all'", parts[3]));
  }
  return inj;
}

}  // namespace nanscope
