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

// "CUDA runtime 13.0, NVIDIA H200" (or why there is no device), or "no CUDA in this build": for
// the workbench's About box.
std::string cuda_description();

}  // namespace nanscope
