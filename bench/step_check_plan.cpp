#include "step_check_plan.h"

#include "session/session.h"

namespace nanscope::bench {

cuda::StepCheckPlan step_check_plan(const Config& config) {
  Session session(config, cuda::make_cuda_backend(config), SessionOptions{});
  session.step();  // the fold's set-up and a first step
  cuda::StepCheckPlan plan;
  cuda::log_check_launches(session.backend(), &plan);
  session.step();
  cuda::log_check_launches(session.backend(), nullptr);
  return plan;
}

}  // namespace nanscope::bench
