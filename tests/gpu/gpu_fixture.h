// A default-size CPU model after a few real updates, and the device forward of the same step on
// the same batch and weights (the GPU tests compare the two).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "batch_sampler.h"
#include "c51_heads.h"
#include "data/bars.h"
#include "model/cpu_model.h"

namespace nanscope::test {

inline double rel_error(const std::vector<float>& a, const float* b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    n += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(d / n);
}

struct GpuFixture {
  Config c;
  CpuModel<float> cpu;
  Dims d;
  cuda::DeviceSampler sampler;
  cuda::DeviceArray<float> params, target;
  cuda::Blas blas;
  cuda::NetBuffers online, online_next, target_next;
  const float *s, *s_next, *ret, *done, *next_bar;

  static Config config() {
    Config c;
    c.optim.target_sync = 3;  // a target network that differs from the online one
    return c;
  }

  GpuFixture()
      : c(config()), cpu(c), d(cpu.d), sampler(cuda::SamplerShape{d.B, d.N, d.Np, d.K, true}),
        params(cpu.params.size()), target(cpu.target.size()), online(d), online_next(d), target_next(d) {
    auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
    auto ts = build_transitions(bars, plan_folds(c.data.bars, c.run.folds, c.data.n_step)[0], c);
    cpu.load_fold(ts);
    for (int st = 0; st < 5; ++st) {  // a few real updates first
      StepKey k{c.run.seed, 0, st, st};
      cpu.sample(k);
      cpu.forward();
      cpu.backward_main();
      cpu.backward_aux();
      cpu.backward_iqn();
      cpu.backward_encoder();
      cpu.optimizer(k);
    }
    cpu.sample(StepKey{c.run.seed, 0, 5, 5});
    cpu.forward();
    sampler.load_fold(ts);
    sampler.sample(c.run.seed, 0, 5);
    params.upload(cpu.params);
    target.upload(cpu.target);
    s = sampler.batch();
    s_next = s + static_cast<std::size_t>(d.B) * d.F;
    ret = s + static_cast<std::size_t>(d.B) * 2 * d.F;
    done = ret + d.B;
    next_bar = done + d.B;
    cuda::net_forward(blas, d, cpu.layout, params.get(), s, online);
    cuda::net_forward(blas, d, cpu.layout, params.get(), s_next, online_next);
    cuda::net_forward(blas, d, cpu.layout, target.get(), s_next, target_next);
  }

  bool expect_close(int slot, const std::vector<float>& gpu, double tol = 1e-5) const {
    const double e = rel_error(gpu, cpu.slots[slot].data());
    std::printf("slot %2d %-20s CUDA vs CPU norm-wise relative error %.3g\n", slot,
                std::string(slot_info(slot).name).c_str(), e);
    return e < tol;
  }
};

}  // namespace nanscope::test
