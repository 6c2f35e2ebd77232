// Where a captured graph's time goes: each kernel and memset node timed alone inside the graph
// (every other such node disabled, so the graph's edges and launch stay those of a replay), and
// the graph's longest chain weighted by those times. bench_cuda_step critical prints it for the
// step graph.
#pragma once

#include <cuda_runtime_api.h>

#include "test_seams.h"

namespace nanscope::cuda {

// Destroys `graph` with the profile (the graph is the caller's until then).
StepGraphProfile profile_graph(cudaGraph_t graph, cudaStream_t stream, int replays);

}  // namespace nanscope::cuda
