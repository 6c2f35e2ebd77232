// What bench/ and the GPU tests look at inside a CUDA backend, apart from the backend's public
// header: the check launches of a step as the backend enqueues them, and the shape of its last
// captured step graph. No CUDA types here.
#pragma once

#include <cstddef>
#include <string>
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

// Where the step graph's time goes: each kernel, memset and copy node of the last captured step
// graph timed alone in the graph (the others disabled), the graph's launch with none of them, the
// whole graph, and the longest chain by those times with its nodes in order. Runs the nodes many
// times over the backend's live buffers: the backend's state is not a trainer's afterwards.
struct StepGraphProfile {
  struct Node {
    std::string name;
    double us = 0;
    bool kernel = false;
  };
  int nodes = 0;
  double full_us = 0, empty_us = 0, sum_us = 0, critical_us = 0;
  std::vector<Node> critical;  // the longest chain by time, first node first
  std::vector<Node> all;       // every node, in the graph's order
};
StepGraphProfile profile_step_graph(Backend& backend, int replays);

}  // namespace nanscope::cuda
