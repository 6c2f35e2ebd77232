// Assertions on the check launches a CUDA step enqueues (cuda::StepCheckPlan), shared by the GPU
// tests of the step graph and of slot health.
#pragma once

#include <gtest/gtest.h>

#include "core/slot_table.h"
#include "cuda_backend.h"
#include "test_seams.h"

namespace nanscope::test {

// The step's last check launch, after the update: the gradient norms (the guard reads them itself)
// and Adam's two slots last, in site order; with the guard nothing else (the rest ran before the
// update), without it whatever was not checked beside the step first.
inline void expect_after_update_launch(const cuda::StepCheckPlan& plan, bool guard) {
  ASSERT_FALSE(plan.launches.empty());
  const auto& last = plan.launches.back();
  ASSERT_GE(last.size(), 3u);
  EXPECT_EQ(last[last.size() - 3].slot, kGradNorm);
  EXPECT_EQ(last[last.size() - 2].slot, kAdamMoments);
  EXPECT_EQ(last[last.size() - 1].slot, kParams);
  if (guard) {
    EXPECT_EQ(last.size(), 3u);
  }
}

}  // namespace nanscope::test
