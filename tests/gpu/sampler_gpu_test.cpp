// The device sampler draws the same batch, actions and taus as the CPU backend for the same
// (seed, fold, step): bit for bit, since both copy the same float32 transitions and compute the
// same Philox draws.
#include <gtest/gtest.h>

#include "batch_sampler.h"
#include "data/bars.h"
#include "device_copy.h"
#include "model/cpu_model.h"

using namespace nanscope;

TEST(DeviceSampler, SameBatchAndDrawsAsTheCpuBackend) {
  Config c;  // default sizes: B = 256, N = N' = K = 32
  c.run.seed = 5;
  auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
  auto windows = plan_folds(c.data.bars, c.run.folds, c.data.n_step);
  CpuModel<float> cpu(c);
  cuda::DeviceSampler gpu(
      cuda::SamplerShape{c.model.batch, c.model.iqn_n, c.model.iqn_n_target, c.model.iqn_k, true});
  for (int fold : {0, 3}) {
    auto ts = build_transitions(bars, windows[fold], c);
    cpu.load_fold(ts);
    gpu.load_fold(ts);
    for (int step : {0, 1, 399}) {
      StepKey key{c.run.seed, fold, step, 0};
      cpu.sample(key);
      gpu.sample(c.run.seed, fold, step);
      const auto buf = gpu.buffers();
      ASSERT_EQ(buf.batch_count, cpu.slots[kBatch].size());
      ASSERT_EQ(buf.tau_count, cpu.slots[kIqnTau].size());
      EXPECT_EQ(test::device_copy(buf.batch, buf.batch_count), cpu.slots[kBatch])
          << "fold " << fold << " step " << step;
      EXPECT_EQ(test::device_copy(buf.actions, cpu.actions.size()), cpu.actions);
      EXPECT_EQ(test::device_copy(buf.tau, buf.tau_count), cpu.slots[kIqnTau]);
      std::vector<float> tt(cpu.tau_target.data(), cpu.tau_target.data() + cpu.tau_target.size());
      std::vector<float> tk(cpu.tau_greedy.data(), cpu.tau_greedy.data() + cpu.tau_greedy.size());
      EXPECT_EQ(test::device_copy(buf.tau_target, tt.size()), tt);
      EXPECT_EQ(test::device_copy(buf.tau_greedy, tk.size()), tk);
    }
  }
}
