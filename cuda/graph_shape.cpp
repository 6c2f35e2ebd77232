#include "graph_shape.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "cuda_backend_impl.h"
#include "device_array.h"

namespace nanscope::cuda {

StepGraphShape shape_of(cudaGraph_t graph) {
  std::size_t n = 0;
  NANSCOPE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) NANSCOPE_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  std::size_t e = 0;
  NANSCOPE_CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e));
  std::vector<cudaGraphNode_t> from(e), to(e);
  if (e) NANSCOPE_CUDA_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &e));

  StepGraphShape shape;
  shape.nodes = static_cast<int>(n);
  std::unordered_map<cudaGraphNode_t, std::size_t> index;
  std::vector<int> is_kernel(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    index[nodes[i]] = i;
    cudaGraphNodeType t{};
    NANSCOPE_CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &t));
    is_kernel[i] = t == cudaGraphNodeTypeKernel;
    shape.kernels += is_kernel[i];
  }
  // Longest path over the DAG in topological order (Kahn), counting nodes and kernels.
  std::vector<std::vector<std::size_t>> out(n);
  std::vector<int> indegree(n, 0);
  for (std::size_t k = 0; k < e; ++k) {
    const std::size_t a = index.at(from[k]), b = index.at(to[k]);
    out[a].push_back(b);
    ++indegree[b];
  }
  std::vector<int> depth(n, 0), kernel_depth(n, 0);
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    const std::size_t i = ready.back();
    ready.pop_back();
    depth[i] += 1;
    kernel_depth[i] += is_kernel[i];
    shape.longest_path = std::max(shape.longest_path, depth[i]);
    shape.kernels_on_longest = std::max(shape.kernels_on_longest, kernel_depth[i]);
    for (std::size_t j : out[i]) {
      depth[j] = std::max(depth[j], depth[i]);
      kernel_depth[j] = std::max(kernel_depth[j], kernel_depth[i]);
      if (--indegree[j] == 0) ready.push_back(j);
    }
  }
  return shape;
}

}  // namespace nanscope::cuda
