// A default-size CPU model after a few real updates, and the device forward of the same step on
// the same batch and weights (the GPU tests compare the two).
#pragma once

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "backward.h"
#include "batch_sampler.h"
#include "c51_heads.h"
#include "data/bars.h"
#include "forward_composition.h"
#include "forward_losses.h"
#include "model/batch_context.h"
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
      : c(config()),
        cpu(c),
        d(cpu.d),
        sampler(cuda::SamplerShape{d.B, d.N, d.Np, d.K, true}),
        params(cpu.params.size()),
        target(cpu.target.size()),
        online(d),
        online_next(d),
        target_next(d) {
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
    const BatchSlotOffsets at = batch_slot_offsets(d);
    s = sampler.batch() + at.obs;
    s_next = sampler.batch() + at.next_obs;
    ret = sampler.batch() + at.returns;
    done = sampler.batch() + at.done;
    next_bar = sampler.batch() + at.next_bar;
    cuda::net_forward(blas, d, cpu.layout, params.get(), s, online);
    cuda::net_forward(blas, d, cpu.layout, params.get(), s_next, online_next);
    cuda::net_forward(blas, d, cpu.layout, target.get(), s_next, target_next);
  }

  // The whole forward of the step on the device (what forward_gpu_test checks slot by slot), in
  // the backend's own head buffers.
  struct Forward : cuda::HeadBuffers {
    explicit Forward(const Dims& d) : HeadBuffers(d), iqn(d) {}
    cuda::IqnBuffers iqn;
    ForwardScalars sc;
  };

  std::unique_ptr<Forward> run_forward() {
    auto fw = std::make_unique<Forward>(d);
    const auto& L = cpu.layout;
    cuda::expected_q(d, online.logp.get(), fw->q.get(), nullptr);
    cuda::expected_q(d, online_next.logp.get(), fw->q_next.get(), nullptr);
    cuda::greedy_actions(d, fw->q_next.get(), fw->astar.get(), nullptr);
    cuda::c51_projection(d, target_next.logp.get(), fw->astar.get(), ret, done, fw->m.get(),
                         nullptr);
    c51_losses(d, false, online.logp.get(), fw->m.get(), sampler.actions(), fw->q.get(),
               target_next.logp.get(), fw->astar.get(), ret, done,
               static_cast<float>(c.loss.alpha_cql), fw->c51.get(), fw->lse.get(), fw->y.get(),
               fw->sc, nullptr);
    auto& iqn = fw->iqn;
    cuda::iqn_embedding(blas, d, L, params.get(), sampler.tau(), d.B * d.N, iqn.cos, iqn.phi_pre,
                        iqn.phi);
    cuda::iqn_quantile_layer(blas, d, L, params.get(), online.h2.get(), d.N, iqn.phi, iqn.psi,
                             iqn.q);
    cuda::iqn_pass(blas, d, L, params.get(), online_next.h2.get(), sampler.tau_greedy(), d.K,
                   iqn.g_cos, iqn.g_work, iqn.g_q);
    cuda::iqn_pass(blas, d, L, target.get(), target_next.h2.get(), sampler.tau_target(), d.Np,
                   iqn.t_cos, iqn.t_work, iqn.t_q);
    iqn_targets_and_loss(d, iqn, sampler.tau(), sampler.actions(), ret, done, iqn, fw->sc, nullptr);
    aux_forward(blas, d, L, params.get(), online.h2.get(), next_bar, fw->aux_pre.get(),
                fw->aux_h.get(), fw->pred.get(), fw->aux_loss.get(), fw->sc);
    ensemble_forward(blas, d, L, params.get(), online.z.get(), fw->m.get(), fw->ve.get(), fw->sc);
    return fw;
  }

  // Against the CPU backend's buffer of the slot, wherever it lives (its own, or a view).
  bool expect_close(int slot, const std::vector<float>& gpu, double tol = 1e-5) {
    return expect_close(slot, gpu, static_cast<const float*>(cpu.slot_view(slot).data), tol);
  }
  static bool expect_close(int slot, const std::vector<float>& gpu, const float* ref,
                           double tol = 1e-5) {
    const double e = rel_error(gpu, ref);
    std::printf("slot %2d %-20s CUDA vs CPU norm-wise relative error %.3g\n", slot,
                std::string(builtin_slot(slot).name).c_str(), e);
    return e < tol;
  }
};

}  // namespace nanscope::test
