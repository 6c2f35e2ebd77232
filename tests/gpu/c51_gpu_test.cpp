// The C51 forward on the device against the CPU backend, default size, same batch and weights:
// slots 3-8 and 10 (bottleneck, value and advantage logits, log-probs, target log-probs, the
// projection, expected Q) and the greedy sub-actions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "batch_sampler.h"
#include "c51_heads.h"
#include "data/bars.h"
#include "model/cpu_model.h"

using namespace nanscope;
using nanscope::cuda::DeviceArray;

namespace {
double rel_error(const std::vector<float>& a, const float* b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    n += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(d / n);
}
}  // namespace

TEST(DeviceC51, ForwardSlotsMatchTheCpuBackend) {
  Config c;
  c.optim.target_sync = 3;  // a target network that differs from the online one
  auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
  auto ts = build_transitions(bars, plan_folds(c.data.bars, c.run.folds, c.data.n_step)[0], c);
  CpuModel<float> cpu(c);
  cpu.load_fold(ts);
  for (int s = 0; s < 5; ++s) {  // a few real updates first
    StepKey k{c.run.seed, 0, s, s};
    cpu.sample(k);
    cpu.forward();
    cpu.backward_main();
    cpu.backward_aux();
    cpu.backward_iqn();
    cpu.backward_encoder();
    cpu.optimizer(k);
  }
  const StepKey key{c.run.seed, 0, 5, 5};
  cpu.sample(key);
  cpu.forward();
  const Dims& d = cpu.d;

  cuda::DeviceSampler sampler(cuda::SamplerShape{d.B, d.N, d.Np, d.K, true});
  sampler.load_fold(ts);
  sampler.sample(c.run.seed, 0, 5);
  DeviceArray<float> params(cpu.params.size()), target(cpu.target.size());
  params.upload(cpu.params);
  target.upload(cpu.target);
  cuda::Blas blas;
  cuda::NetBuffers online(d), online_next(d), target_next(d);
  const float* s = sampler.batch();
  const float* s_next = s + static_cast<std::size_t>(d.B) * d.F;
  const float* ret = s + static_cast<std::size_t>(d.B) * 2 * d.F;
  const float* done = ret + d.B;
  cuda::net_forward(blas, d, cpu.layout, params.get(), s, online);
  cuda::net_forward(blas, d, cpu.layout, params.get(), s_next, online_next);
  cuda::net_forward(blas, d, cpu.layout, target.get(), s_next, target_next);
  DeviceArray<float> q(static_cast<std::size_t>(d.B) * d.A), q_next(q.size());
  DeviceArray<std::int32_t> astar(static_cast<std::size_t>(d.B) * d.D);
  DeviceArray<float> m(static_cast<std::size_t>(d.B) * d.D * d.NA);
  cuda::expected_q(d, online.logp.get(), q.get(), nullptr);
  cuda::expected_q(d, online_next.logp.get(), q_next.get(), nullptr);
  cuda::greedy_actions(d, q_next.get(), astar.get(), nullptr);
  cuda::c51_projection(d, target_next.logp.get(), astar.get(), ret, done, m.get(), nullptr);

  struct Row {
    int slot;
    std::vector<float> gpu;
  } rows[] = {{kBnZ, online.z.download()},           {kValueLogits, online.v.download()},
              {kAdvLogits, online.adv.download()},   {kLogProbs, online.logp.download()},
              {kTargetLogProbs, target_next.logp.download()}, {kProjTarget, m.download()},
              {kQExpected, q.download()}};
  for (const auto& r : rows) {
    const double e = rel_error(r.gpu, cpu.slots[r.slot].data());
    std::printf("slot %2d %-18s CUDA vs CPU norm-wise relative error %.3g\n", r.slot,
                std::string(slot_info(r.slot).name).c_str(), e);
    EXPECT_LT(e, 1e-5) << slot_info(r.slot).name;
  }
  EXPECT_EQ(astar.download(), cpu.astar);
}
