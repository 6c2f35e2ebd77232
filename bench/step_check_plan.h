// The check launches of one real step of the CUDA backend under `config` (an ordinary step, the
// second of a session's run), as the backend notes them (cuda::log_check_launches).
#pragma once

#include "core/config.h"
#include "cuda_backend.h"
#include "test_seams.h"

namespace nanscope::bench {

cuda::StepCheckPlan step_check_plan(const Config& config);

}  // namespace nanscope::bench
