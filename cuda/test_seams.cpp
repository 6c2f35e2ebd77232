// The test seams of test_seams.h: a log of a CUDA backend's check launches (bench/sentinel's view
// of a real step) and its last step graph's shape.
#include "cuda_backend_impl.h"

namespace nanscope::cuda {

namespace {
template <class B>
auto* as_cuda(B& backend, const char* what) {
  auto* cuda =
      dynamic_cast<std::conditional_t<std::is_const_v<B>, const CudaBackend, CudaBackend>*>(
          &backend);
  if (!cuda) throw InternalError(std::string(what) + ": not a CUDA backend");
  return cuda;
}
}  // namespace

void log_check_launches(Backend& backend, StepCheckPlan* log) {
  as_cuda(backend, "log_check_launches")->check_bank().set_launch_log(log);
}

StepGraphShape step_graph_shape(const Backend& backend) {
  return as_cuda(backend, "step_graph_shape")->graph_shape();
}

StepGraphProfile profile_step_graph(Backend& backend, int replays) {
  return as_cuda(backend, "profile_step_graph")->profile_graph(replays);
}

}  // namespace nanscope::cuda
