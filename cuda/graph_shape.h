// What a captured graph is made of: its nodes, the kernel nodes among them, and its longest chain
// of dependent nodes (the launches a replay runs one after another at the least).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "test_seams.h"

namespace nanscope::cuda {

StepGraphShape shape_of(cudaGraph_t graph);

// A captured graph's nodes, and its edges as each node's successors (indices into `nodes`) with
// each node's count of predecessors: what a walk in dependency order needs.
struct GraphTopology {
  std::vector<cudaGraphNode_t> nodes;
  std::vector<std::vector<std::size_t>> out;
  std::vector<int> indegree;
};
GraphTopology topology_of(cudaGraph_t graph);

}  // namespace nanscope::cuda
