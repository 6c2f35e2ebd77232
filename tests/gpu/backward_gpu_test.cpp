// The backward on the device against the CPU backend, default size, same step: slots 24-32, the
// trunk gradient bw_d_h_s2 at its three moments (33, 34, 35) and every parameter gradient.
#include <gtest/gtest.h>

#include <limits>

#include "gpu_fixture.h"
#include "optimizer.h"
#include "reference/reference_math.h"

using namespace nanscope;

TEST(DeviceBackward, BackwardBuffersAndParameterGradientsMatchTheCpuBackend) {
  test::GpuFixture f;
  auto fw = f.run_forward();
  const Dims& d = f.d;
  CpuModel<float>& cpu = f.cpu;
  // CPU reference, with bw_d_h_s2 at each moment.
  cpu.backward_main();
  std::vector<float> cpu33(cpu.bw_d_h_s2.data(), cpu.bw_d_h_s2.data() + cpu.bw_d_h_s2.size());
  cpu.backward_aux();
  std::vector<float> cpu34(cpu.bw_d_h_s2.data(), cpu.bw_d_h_s2.data() + cpu.bw_d_h_s2.size());
  cpu.backward_iqn();
  std::vector<float> cpu35(cpu.bw_d_h_s2.data(), cpu.bw_d_h_s2.data() + cpu.bw_d_h_s2.size());
  cpu.backward_encoder();

  cuda::ForwardState st{f.s,
                        f.next_bar,
                        f.sampler.actions(),
                        f.online.h1.get(),
                        f.online.pre1.get(),
                        f.online.pre2.get(),
                        f.online.h2.get(),
                        f.online.z.get(),
                        f.online.logp.get(),
                        fw->q.get(),
                        fw->m.get(),
                        fw->y.get(),
                        fw->lse.get(),
                        fw->ve.get(),
                        f.sampler.tau(),
                        fw->iqn.cos.get(),
                        fw->iqn.phi_pre.get(),
                        fw->iqn.phi.get(),
                        fw->iqn.psi.get(),
                        fw->iqn.q.get(),
                        fw->iqn.targets.get(),
                        fw->aux_pre.get(),
                        fw->aux_h.get(),
                        fw->pred.get()};
  const auto& l = f.c.loss;
  cuda::LossWeights w{static_cast<float>(l.lambda_mse), static_cast<float>(l.alpha_cql),
                      static_cast<float>(l.lambda_iqn), static_cast<float>(l.lambda_aux),
                      static_cast<float>(l.lambda_ens)};
  cuda::BackwardBuffers b(d, cpu.params.size());
  cuda::Lanes lanes(f.blas.stream(), f.blas);  // off: one stream, the phases in order
  cuda::backward_clear(d, b, f.blas.stream());
  cuda::backward_main(lanes, d, cpu.layout, f.params.get(), st, w, b);
  auto gpu33 = b.bw.download();
  cuda::backward_aux(lanes, {}, d, cpu.layout, f.params.get(), st, w, b);
  auto gpu34 = b.bw.download();
  cuda::backward_iqn(lanes, {}, d, cpu.layout, f.params.get(), st, w, b);
  auto gpu35 = b.bw.download();
  cuda::backward_encoder(lanes, d, cpu.layout, f.params.get(), st, b);

  EXPECT_TRUE(f.expect_close(kDValueLogits, b.d_value.download()));
  EXPECT_TRUE(f.expect_close(kDAdvLogits, b.d_adv.download()));
  EXPECT_TRUE(f.expect_close(kIqnTrunkM, b.trunk_m.download()));
  EXPECT_TRUE(f.expect_close(kIqnDHS2, b.iqn_dh.download()));
  EXPECT_TRUE(f.expect_close(kDBranchLogits, b.iqn_dq.download()));
  EXPECT_TRUE(f.expect_close(kCqlDValueLogits, b.cql_dv.download()));
  EXPECT_TRUE(f.expect_close(kAuxDHS2Nb, b.aux_dh.download()));
  EXPECT_TRUE(f.expect_close(kEnsembleDLogits, b.d_ve.download()));
  EXPECT_TRUE(f.expect_close(kBnDConcat, b.dz.download()));
  EXPECT_TRUE(test::GpuFixture::expect_close(kBwDHS2Main, gpu33, cpu33.data()));
  EXPECT_TRUE(test::GpuFixture::expect_close(kBwDHS2Aux, gpu34, cpu34.data()));
  EXPECT_TRUE(test::GpuFixture::expect_close(kBwDHS2Iqn, gpu35, cpu35.data()));
  const auto grads = b.grads.download();
  for (const ParamEntry* e : cpu.layout.existing()) {
    std::vector<float> g(grads.begin() + static_cast<std::ptrdiff_t>(e->offset),
                         grads.begin() + static_cast<std::ptrdiff_t>(e->offset + e->count));
    const double err = test::rel_error(g, cpu.grads.data() + e->offset);
    std::printf("grad %-14s CUDA vs CPU norm-wise relative error %.3g\n", e->name.c_str(), err);
    EXPECT_LT(err, 1e-4) << e->name;
  }
}

TEST(DeviceOptimizer, NormsClipAndAdamMatchTheCpuBackend) {
  test::GpuFixture f;
  CpuModel<float>& cpu = f.cpu;
  cpu.backward_main();
  cpu.backward_aux();
  cpu.backward_iqn();
  cpu.backward_encoder();
  // The same gradients, parameters and Adam state on the device; a clip that bites.
  cuda::DeviceArray<float> grads(cpu.grads.size()), params(cpu.params.size()),
      adam(cpu.adam.size()), norms(8);
  grads.upload(cpu.grads);
  params.upload(cpu.params);
  adam.upload(cpu.adam);
  OptimConfig o = f.c.optim;
  o.max_grad_norm = 0.05;
  cpu.config.optim.max_grad_norm = 0.05;
  cuda::DeviceOptimizer opt(cpu.layout, o);
  opt.grad_norms(grads.get(), norms.get());
  cuda::reference::adam_step(opt, grads.get(), params.get(), adam.get(), norms.get(),
                             cpu.adam_t + 1);
  cpu.optimizer(StepKey{f.c.run.seed, 0, 5, 5});
  EXPECT_TRUE(f.expect_close(kGradNorm, norms.download(), 1e-6));
  EXPECT_GT(cpu.slots[kGradNorm][0], 0.05f);  // the clip was active
  EXPECT_TRUE(test::GpuFixture::expect_close(kAdamMoments, adam.download(), cpu.adam.data(), 1e-6));
  EXPECT_TRUE(test::GpuFixture::expect_close(kParams, params.download(), cpu.params.data(), 1e-7));
  // A NaN gradient gives a NaN norm and NaN parameters, never a silent scale of 1.
  std::vector<float> bad = cpu.grads;
  bad[cpu.layout[kValB].offset] = std::numeric_limits<float>::quiet_NaN();
  grads.upload(bad);
  opt.grad_norms(grads.get(), norms.get());
  cuda::reference::adam_step(opt, grads.get(), params.get(), adam.get(), norms.get(),
                             cpu.adam_t + 1);
  EXPECT_TRUE(std::isnan(norms.download()[0]));
  EXPECT_TRUE(std::isnan(params.download()[cpu.layout[kEncW1].offset]));

  // The guard reads the norms itself (slot 21 is checked after the update): a non-finite norm and a
  // clean status word leave parameters, moments and t untouched; finite norms let the step through.
  params.upload(cpu.params);
  adam.upload(cpu.adam);
  cuda::DeviceArray<std::uint32_t> status(1);
  status.upload({0u});
  cuda::DeviceArray<std::int64_t> t(1);
  t.upload({4});
  std::vector<float> norm_values(8, 1.f);
  norm_values[3] = std::numeric_limits<float>::infinity();  // a group's norm overflowed
  norms.upload(norm_values);
  grads.upload(cpu.grads);
  opt.adam_step(grads.get(), params.get(), adam.get(), norms.get(), t.get(),
                cuda::AdamGuard{status.get(), norms.get()});
  EXPECT_EQ(t.download()[0], 4);
  EXPECT_TRUE(params.download() == cpu.params);
  EXPECT_TRUE(adam.download() == cpu.adam);
  norm_values[3] = 1.f;
  norms.upload(norm_values);
  opt.adam_step(grads.get(), params.get(), adam.get(), norms.get(), t.get(),
                cuda::AdamGuard{status.get(), norms.get()});
  EXPECT_EQ(t.download()[0], 5);
  EXPECT_FALSE(params.download() == cpu.params);
}
