// What bench/ and the GPU tests look at inside a CUDA backend, apart from the backend's public
// header: the check launches of a step as the backend enqueues them, and the shape of its last
// captured step graph. No CUDA types here.
#pragma once

#include <cstddef>
#include <vector>

#include "gemm_work.h"
#include "model/backend.h"

namespace nanscope::cuda {

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

// The step graph a CUDA backend captured last: its nodes, the kernel nodes among them, and its
// longest chain of dependent nodes and the most kernels on any chain (the launches a replay runs
// one after another at the least), and the step's GEMM work. All zero before a capture.
struct StepGraphShape {
  int nodes = 0, kernels = 0, longest_path = 0, kernels_on_longest = 0;
  bool one_stream = false;  // captured with NANSCOPE_STEP_LANES=0
  GemmWork gemms;
};
StepGraphShape step_graph_shape(const Backend& backend);

}  // namespace nanscope::cuda
