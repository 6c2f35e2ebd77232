// step_check_plan: the check launches of one real step, noted by the backend as it enqueues them.
#include "cuda_backend_impl.h"
#include "session/session.h"

namespace nanscope::cuda {

StepCheckPlan step_check_plan(const Config& config) {
  std::unique_ptr<Backend> owned = make_cuda_backend(config);
  auto* backend = static_cast<CudaBackend*>(owned.get());
  Session session(config, std::move(owned), SessionOptions{});
  session.step();  // the fold's set-up and a first step
  StepCheckPlan plan;
  backend->launch_log_ = &plan;
  session.step();
  backend->launch_log_ = nullptr;
  return plan;
}

}  // namespace nanscope::cuda
