// The CUDA backend reports whether a step's update ran as the device decided it before the update
// (the step record's `updated` word, written by advance_t), and agrees with the CPU backend step
// by step: a fire in params or adam_moments keeps the update, a fire before it skips it only with
// the guard on; graphed and ungraphed alike.
#include <gtest/gtest.h>

#include "cuda_backend.h"
#include "model/backend.h"
#include "session/injection.h"
#include "session/session.h"

namespace nanscope {
namespace {

std::vector<bool> updated_steps(bool cuda, bool graph, bool guard, const std::string& injection) {
  Config c;
  c.run.folds = 1;
  c.run.steps_per_fold = 5;
  c.model.batch = 32;
  c.model.hidden = 64;
  c.halt.on_fire = HaltOnFire::Never;
  c.guard.enabled = guard;
  SessionOptions o;
  o.graph = graph;
  o.injections.push_back(parse_injection(injection));
  Session s(c, cuda ? cuda::make_cuda_backend(c) : make_cpu_backend(c), o);
  s.run();
  std::vector<bool> out;
  for (const StepRecord& r : s.history()) out.push_back(r.updated);
  return out;
}

TEST(CudaUpdated, TheDeviceReportsWhatTheUpdateDidAsTheCpuDoes) {
  for (const char* injection : {"slot:params@0:2", "slot:adam_moments@0:2", "slot:h_s2@0:2"})
    for (bool guard : {false, true}) {
      const auto cpu = updated_steps(false, false, guard, injection);
      ASSERT_EQ(cpu.size(), 5u);
      const bool before_update = std::string(injection) == "slot:h_s2@0:2";
      EXPECT_EQ(cpu[2], !(guard && before_update)) << injection << " guard " << guard;
      for (bool graph : {false, true})
        EXPECT_EQ(updated_steps(true, graph, guard, injection), cpu)
            << injection << " guard " << guard << " graph " << graph;
    }
}

}  // namespace
}  // namespace nanscope
