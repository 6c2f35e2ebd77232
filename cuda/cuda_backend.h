// The CUDA trainer backend: the whole step of docs/trainer.md on the GPU (float32, cuBLAS in full
// fp32), with the same phases, slots and call sites as the CPU reference, and the sentinel checks
// on the device. No CUDA types here.
#pragma once

#include <memory>

#include "model/backend.h"

namespace nanscope::cuda {

// Throws DeviceError when no usable device is present, ConfigError for model.precision = float64
// (the CUDA backend is float32).
std::unique_ptr<Backend> make_cuda_backend(const Config& config);

}  // namespace nanscope::cuda
