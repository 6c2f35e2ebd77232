// log_check_launches: attaches a log in which the backend notes its check launches as it enqueues
// them (bench/sentinel's view of a real step).
#include "cuda_backend_impl.h"

namespace nanscope::cuda {

void log_check_launches(Backend& backend, StepCheckPlan* log) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) throw InternalError("log_check_launches: not a CUDA backend");
  cuda->launch_log_ = log;
}

}  // namespace nanscope::cuda
