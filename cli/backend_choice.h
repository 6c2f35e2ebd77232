// Picks the trainer backend for --backend auto|cuda|cpu. Only the CPU backend exists in this
// version; `auto` says so when a CUDA device is present, `cuda` is refused with exit code 69.
#pragma once

#include <memory>
#include <string>

#include "model/backend.h"

namespace nanscope::cli {

std::unique_ptr<Backend> choose_backend(const std::string& choice, const Config& config, bool say);

}  // namespace nanscope::cli
