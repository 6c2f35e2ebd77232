// The CUDA trainer backend: the whole step of docs/trainer.md on the GPU (float32, cuBLAS in full
// fp32), with the same phases, slots and call sites as the CPU reference, and the sentinel checks
// on the device. No CUDA types here.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "model/backend.h"

namespace nanscope::cuda {

// Throws DeviceError when no usable device is present, ConfigError for model.precision = float64
// (the CUDA backend is float32).
std::unique_ptr<Backend> make_cuda_backend(const Config& config);

// The sentinel checks a CUDA backend enqueues while a log is attached: each fused check launch with
// its slots and buffer lengths, in order, and the slots that their producer kernels check in place.
// bench/sentinel attaches one for an ordinary step and builds its sentinel_set graph from it.
struct StepCheckPlan {
  struct Item {
    int slot;
    std::size_t count;
  };
  std::vector<std::vector<Item>> launches;
  std::vector<Item> in_producers;
};
// Attaches `log` to `backend` (a CUDA backend; nullptr detaches): its check launches are noted
// there.
void log_check_launches(Backend& backend, StepCheckPlan* log);

}  // namespace nanscope::cuda
