// The C51 forward on the device against the CPU backend, default size, same batch and weights:
// slots 3-8 and 10 (bottleneck, value and advantage logits, log-probs, target log-probs, the
// projection, expected Q) and the greedy sub-actions.
#include <gtest/gtest.h>

#include "gpu_fixture.h"

using namespace nanscope;
using nanscope::cuda::DeviceArray;

TEST(DeviceC51, ForwardSlotsMatchTheCpuBackend) {
  test::GpuFixture f;
  const Dims& d = f.d;
  DeviceArray<float> q(static_cast<std::size_t>(d.B) * d.A), q_next(q.size());
  DeviceArray<std::int32_t> astar(static_cast<std::size_t>(d.B) * d.D);
  DeviceArray<float> m(static_cast<std::size_t>(d.B) * d.D * d.NA);
  cuda::expected_q(d, f.online.logp.get(), q.get(), nullptr);
  cuda::expected_q(d, f.online_next.logp.get(), q_next.get(), nullptr);
  cuda::greedy_actions(d, q_next.get(), astar.get(), nullptr);
  cuda::c51_projection(d, f.target_next.logp.get(), astar.get(), f.ret, f.done, m.get(), nullptr);
  EXPECT_TRUE(f.expect_close(kBnZ, f.online.z.download()));
  EXPECT_TRUE(f.expect_close(kValueLogits, f.online.v.download()));
  EXPECT_TRUE(f.expect_close(kAdvLogits, f.online.adv.download()));
  EXPECT_TRUE(f.expect_close(kLogProbs, f.online.logp.download()));
  EXPECT_TRUE(f.expect_close(kTargetLogProbs, f.target_next.logp.download()));
  EXPECT_TRUE(f.expect_close(kProjTarget, m.download()));
  EXPECT_TRUE(f.expect_close(kQExpected, q.download()));
  EXPECT_EQ(astar.download(), f.cpu.astar);
}
