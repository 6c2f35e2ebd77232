// The current time in UTC, formatted: run folders' names ("20261203T150247Z") and the run file's
// created_utc ("2026-12-03T15:02:47Z").
#pragma once

#include <string>

namespace nanscope {

// `format` as std::strftime takes it; `milliseconds`: the milliseconds as three more digits before
// a trailing "Z"
// ("20261203T150247123Z": live workbench runs, several a second).
std::string utc_now(const char* format, bool milliseconds = false);
inline constexpr const char* kUtcCompact = "%Y%m%dT%H%M%SZ";
inline constexpr const char* kUtcIso = "%Y-%m-%dT%H:%M:%SZ";

}  // namespace nanscope
