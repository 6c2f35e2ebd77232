#include "graph_shape.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "cuda_backend_impl.h"
#include "device_array.h"

namespace nanscope::cuda {

GraphTopology topology_of(cudaGraph_t graph) {
  GraphTopology t;
  std::size_t n = 0;
  NANSCOPE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  t.nodes.resize(n);
  if (n) NANSCOPE_CUDA_CHECK(cudaGraphGetNodes(graph, t.nodes.data(), &n));
  std::size_t e = 0;
  NANSCOPE_CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e));
  std::vector<cudaGraphNode_t> from(e), to(e);
  if (e) NANSCOPE_CUDA_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &e));
  std::unordered_map<cudaGraphNode_t, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index[t.nodes[i]] = i;
  t.out.resize(n);
  t.indegree.assign(n, 0);
  for (std::size_t k = 0; k < e; ++k) {
    t.out[index.at(from[k])].push_back(index.at(to[k]));
    ++t.indegree[index.at(to[k])];
  }
  return t;
}

StepGraphShape shape_of(cudaGraph_t graph) {
  GraphTopology t = topology_of(graph);
  const std::size_t n = t.nodes.size();
  StepGraphShape shape;
  shape.nodes = static_cast<int>(n);
  std::vector<int> is_kernel(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type{};
    NANSCOPE_CUDA_CHECK(cudaGraphNodeGetType(t.nodes[i], &type));
    is_kernel[i] = type == cudaGraphNodeTypeKernel;
    shape.kernels += is_kernel[i];
  }
  // Longest path over the DAG in topological order (Kahn), counting nodes and kernels.
  std::vector<std::vector<std::size_t>>& out = t.out;
  std::vector<int>& indegree = t.indegree;
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
