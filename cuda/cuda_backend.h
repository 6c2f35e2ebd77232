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

// The sentinel checks that one step of the CUDA backend enqueues under `config` (an ordinary step,
// the second of a session's run): each fused check launch with its slots and buffer lengths, in
// order, and the slots that their producer kernels check in place. For bench/sentinel, whose
// sentinel_set graph is exactly these launches.
struct StepCheckPlan {
  struct Item {
    int slot;
    std::size_t count;
  };
  std::vector<std::vector<Item>> launches;
  std::vector<Item> in_producers;
};
StepCheckPlan step_check_plan(const Config& config);

}  // namespace nanscope::cuda
