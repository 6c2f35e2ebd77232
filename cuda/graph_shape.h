// What a captured graph is made of: its nodes, the kernel nodes among them, and its longest chain
// of dependent nodes (the launches a replay runs one after another at the least).
#pragma once

#include <cuda_runtime_api.h>

#include "test_seams.h"

namespace nanscope::cuda {

StepGraphShape shape_of(cudaGraph_t graph);

}  // namespace nanscope::cuda
