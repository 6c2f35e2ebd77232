// The JSON summary of a run (schema_version 1; the README shows it).
#pragma once

#include <nlohmann/json.hpp>

#include "session/session.h"

namespace nanscope::cli {

nlohmann::ordered_json run_summary(Session& session);

}  // namespace nanscope::cli
