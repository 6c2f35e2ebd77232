// Picks the trainer backend for --backend auto|cuda|cpu (the CLI and the GUI both ask here).
// The CUDA backend comes from the CUDA plugin (cuda_plugin.h), loaded at run time.
// auto: the CUDA backend when the plugin is installed, a device is present and the config is
// float32, otherwise the CPU backend. cuda without the plugin or without a device is a DeviceError
// (exit code 69) that says what is missing.
#pragma once

#include <memory>
#include <string>

#include "model/backend.h"

namespace nanscope {

// `say`: print the choice made for `auto` on stderr, in one line with its reason.
std::unique_ptr<Backend> choose_backend(BackendChoice choice, const Config& config, bool say);

// What the CUDA backend would run on, or why there is none, in one sentence: "CUDA plugin
// /usr/lib/nanscope/libnanscope-cuda.so: CUDA runtime 13.0, NVIDIA H200", or "no CUDA plugin
// (...)". For the workbench's About box and status bar.
std::string cuda_description();

// The same in a few words, for the status bar: "CUDA: NVIDIA H200", "CUDA: no device",
// "CUDA: no plugin", "CUDA: plugin not loadable" (a library it needs is missing), "CUDA: plugin
// refused" (another version, not a plugin).
std::string cuda_summary();

}  // namespace nanscope
