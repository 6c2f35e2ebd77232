// The C51 forward on the device against the CPU backend, default size, same batch and weights:
// slots 3-8 and 10 (bottleneck, value and advantage logits, log-probs, target log-probs, the
// projection, expected Q) and the greedy sub-actions.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

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

// The step's one-launch form (expected Q and the greedy sub-actions of the online network on s')
// gives the two launches' values bit for bit, also with a NaN in a row (that branch's action -1).
TEST(DeviceC51, ExpectedQAndGreedyInOneLaunchAreTheTwoLaunchesBitForBit) {
  test::GpuFixture f;
  const Dims& d = f.d;
  std::vector<float> logp = f.online_next.logp.download();
  logp[static_cast<std::size_t>(5 * d.A + 1) * d.NA + 7] = std::numeric_limits<float>::quiet_NaN();
  DeviceArray<float> in(logp.size());
  in.upload(logp);
  DeviceArray<float> q_two(static_cast<std::size_t>(d.B) * d.A), q_one(q_two.size());
  DeviceArray<std::int32_t> a_two(static_cast<std::size_t>(d.B) * d.D), a_one(a_two.size());
  cuda::expected_q(d, in.get(), q_two.get(), nullptr);
  cuda::greedy_actions(d, q_two.get(), a_two.get(), nullptr);
  cuda::expected_q_greedy(d, in.get(), q_one.get(), a_one.get(), nullptr);
  const std::vector<float> two = q_two.download(), one = q_one.download();
  ASSERT_EQ(two.size(), one.size());
  EXPECT_EQ(0, std::memcmp(two.data(), one.data(), two.size() * sizeof(float)));
  const std::vector<std::int32_t> actions = a_one.download();
  EXPECT_EQ(actions, a_two.download());
  EXPECT_EQ(actions[static_cast<std::size_t>(5 * d.D)], -1);  // the NaN row's branch
}
