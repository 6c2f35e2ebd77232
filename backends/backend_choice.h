// Picks the trainer backend for --backend auto|cuda|cpu (the CLI and the GUI both ask here).
// auto: the CUDA backend when this build has it and a device is present (and the config is
// float32), otherwise the CPU backend. cuda without a device is a DeviceError (exit code 69).
#pragma once

#include <memory>
#include <string>

#include "model/backend.h"

namespace nanscope {

// `say`: print the choice made for `auto` on stderr.
std::unique_ptr<Backend> choose_backend(const std::string& choice, const Config& config, bool say);

}  // namespace nanscope
