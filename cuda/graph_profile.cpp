#include "graph_profile.h"

#include <cuda.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "cuda_backend_impl.h"
#include "device_array.h"
#include "graph_shape.h"

namespace nanscope::cuda {
namespace {

// A kernel node's function name, demangled, through the driver (the node may hold a CUfunction
// of cuBLAS's module or a CUkernel of ours); "kernel" where the driver has no name for it.
std::string kernel_name(cudaGraphNode_t node) {
  using GetParams = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*);
  using FuncName = CUresult (*)(const char**, CUfunction);
  using KernelName = CUresult (*)(const char**, CUkernel);
  static GetParams get_params = nullptr;
  static FuncName func_name = nullptr;
  static KernelName kernel_name_of = nullptr;
  static bool looked_up = false;
  if (!looked_up) {
    looked_up = true;
    cudaDriverEntryPointQueryResult q{};
    NANSCOPE_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams",
                                                         reinterpret_cast<void**>(&get_params),
                                                         12000, cudaEnableDefault, &q));
    NANSCOPE_CUDA_CHECK(cudaGetDriverEntryPointByVersion(
        "cuFuncGetName", reinterpret_cast<void**>(&func_name), 12030, cudaEnableDefault, &q));
    NANSCOPE_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuKernelGetName",
                                                         reinterpret_cast<void**>(&kernel_name_of),
                                                         12030, cudaEnableDefault, &q));
  }
  CUDA_KERNEL_NODE_PARAMS p{};
  const char* raw = nullptr;
  if (!get_params || get_params(reinterpret_cast<CUgraphNode>(node), &p) != CUDA_SUCCESS)
    return "kernel";
  if (p.func && func_name) func_name(&raw, p.func);
  if (!raw && p.kern && kernel_name_of) kernel_name_of(&raw, p.kern);
  if (!raw) return "kernel";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> plain(abi::__cxa_demangle(raw, nullptr, nullptr, &status),
                                               std::free);
  std::string name = status == 0 && plain ? plain.get() : raw;
  // Shorter: without the return type, namespaces and parameters (templates' arguments kept).
  for (const char* noise : {"(anonymous namespace)::", "nanscope::cuda::", "void "}) {
    for (auto at = name.find(noise); at != std::string::npos; at = name.find(noise))
      name.erase(at, std::char_traits<char>::length(noise));
  }
  const auto args = name.rfind('(');
  if (args != std::string::npos && args > 0) name.resize(args);
  if (name.size() > 90) name.resize(90);
  return name;
}

const char* node_type_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeMemset:
      return "memset";
    case cudaGraphNodeTypeMemcpy:
      return "memcpy";
    case cudaGraphNodeTypeMemAlloc:
      return "(memory allocation)";
    case cudaGraphNodeTypeMemFree:
      return "(memory free)";
    case cudaGraphNodeTypeEmpty:
      return "(empty)";
    case cudaGraphNodeTypeEventRecord:
      return "(event record)";
    case cudaGraphNodeTypeWaitEvent:
      return "(event wait)";
    case cudaGraphNodeTypeHost:
      return "(host function)";
    case cudaGraphNodeTypeGraph:
      return "(child graph)";
    default:
      return "(other)";
  }
}

struct Event {
  cudaEvent_t e = nullptr;
  Event() { NANSCOPE_CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e; }
};

// Microseconds per launch of `exec`, the median of three rounds of `replays` launches.
double us_per_launch(cudaGraphExec_t exec, cudaStream_t stream, int replays) {
  Event a, b;
  double t[3];
  for (double& r : t) {
    NANSCOPE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    NANSCOPE_CUDA_CHECK(cudaEventRecord(a.get(), stream));
    for (int i = 0; i < replays; ++i) NANSCOPE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    NANSCOPE_CUDA_CHECK(cudaEventRecord(b.get(), stream));
    NANSCOPE_CUDA_CHECK(cudaEventSynchronize(b.get()));
    float ms = 0.f;
    NANSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
    r = 1e3 * ms / replays;
  }
  std::sort(t, t + 3);
  return t[1];
}

}  // namespace

StepGraphProfile profile_graph(cudaGraph_t graph, cudaStream_t stream, int replays) {
  struct Owner {
    cudaGraph_t g;
    ~Owner() { cudaGraphDestroy(g); }
  } owner{graph};
  GraphTopology topo = topology_of(graph);
  const std::vector<cudaGraphNode_t>& nodes = topo.nodes;
  const std::size_t n = nodes.size();
  std::vector<StepGraphProfile::Node> info(n);
  std::vector<bool> timed(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    cudaGraphNodeType t{};
    NANSCOPE_CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &t));
    info[i].name = t == cudaGraphNodeTypeKernel ? kernel_name(nodes[i]) : node_type_name(t);
    info[i].kernel = t == cudaGraphNodeTypeKernel;
    timed[i] = t == cudaGraphNodeTypeKernel || t == cudaGraphNodeTypeMemset ||
               t == cudaGraphNodeTypeMemcpy;
  }
  GraphExec exec;
  exec.instantiate(graph);
  StepGraphProfile p;
  p.nodes = static_cast<int>(n);
  p.full_us = us_per_launch(exec.get(), stream, replays);
  auto enable = [&](std::size_t i, bool on) {
    NANSCOPE_CUDA_CHECK(cudaGraphNodeSetEnabled(exec.get(), nodes[i], on ? 1u : 0u));
  };
  for (std::size_t i = 0; i < n; ++i)
    if (timed[i]) enable(i, false);
  p.empty_us = us_per_launch(exec.get(), stream, replays);
  for (std::size_t i = 0; i < n; ++i) {
    if (!timed[i]) continue;
    enable(i, true);
    info[i].us = std::max(0.0, us_per_launch(exec.get(), stream, replays) - p.empty_us);
    enable(i, false);
    p.sum_us += info[i].us;
  }
  // The longest chain by time (Kahn's order), each node's best predecessor kept.
  const std::vector<std::vector<std::size_t>>& out = topo.out;
  std::vector<int>& indegree = topo.indegree;
  std::vector<double> reach(n, 0.0);  // the chain's time up to the node's start
  std::vector<std::ptrdiff_t> before(n, -1);
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(i);
  std::ptrdiff_t last = -1;
  double best = -1.0;
  while (!ready.empty()) {
    const std::size_t i = ready.back();
    ready.pop_back();
    const double end = reach[i] + info[i].us;
    if (end > best) {
      best = end;
      last = static_cast<std::ptrdiff_t>(i);
    }
    for (std::size_t j : out[i]) {
      if (before[j] < 0 || end > reach[j]) {
        reach[j] = end;
        before[j] = static_cast<std::ptrdiff_t>(i);
      }
      if (--indegree[j] == 0) ready.push_back(j);
    }
  }
  p.critical_us = std::max(best, 0.0);
  for (std::ptrdiff_t i = last; i >= 0; i = before[static_cast<std::size_t>(i)])
    p.critical.push_back(info[static_cast<std::size_t>(i)]);
  std::reverse(p.critical.begin(), p.critical.end());
  p.all = std::move(info);
  return p;
}

}  // namespace nanscope::cuda
