// The rest of the forward on the device against the CPU backend: slots 9, 11-20 and the loss
// scalars, default size, same batch, draws and weights.
#include <gtest/gtest.h>

#include "forward_losses.h"
#include "gpu_fixture.h"

using namespace nanscope;
using nanscope::cuda::DeviceArray;

TEST(DeviceForward, LossesIqnAuxEnsembleAndTotalMatchTheCpuBackend) {
  test::GpuFixture f;
  const Dims& d = f.d;
  const auto& L = f.cpu.layout;
  DeviceArray<float> q(static_cast<std::size_t>(d.B) * d.A), q_next(q.size());
  DeviceArray<std::int32_t> astar(static_cast<std::size_t>(d.B) * d.D);
  DeviceArray<float> m(static_cast<std::size_t>(d.B) * d.D * d.NA);
  cuda::expected_q(d, f.online.logp.get(), q.get(), nullptr);
  cuda::expected_q(d, f.online_next.logp.get(), q_next.get(), nullptr);
  cuda::greedy_actions(d, q_next.get(), astar.get(), nullptr);
  cuda::c51_projection(d, f.target_next.logp.get(), astar.get(), f.ret, f.done, m.get(), nullptr);

  cuda::ForwardScalars sc;
  DeviceArray<float> c51(d.B), lse(static_cast<std::size_t>(d.B) * d.D), y(lse.size());
  cuda::c51_losses(d, false, f.online.logp.get(), m.get(), f.sampler.actions(), q.get(), f.target_next.logp.get(),
                   astar.get(), f.ret, f.done, static_cast<float>(f.c.loss.alpha_cql), c51.get(), lse.get(), y.get(),
                   sc, nullptr);

  cuda::IqnBuffers iqn(d);
  cuda::iqn_pass(f.blas, d, L, f.params.get(), f.online.h2.get(), f.sampler.tau(), d.N, iqn.cos, iqn.phi_pre,
                 iqn.phi, iqn.psi, iqn.q);
  cuda::iqn_pass(f.blas, d, L, f.params.get(), f.online_next.h2.get(), f.sampler.tau_greedy(), d.K, iqn.g_cos,
                 iqn.g_phi_pre, iqn.g_phi, iqn.g_psi, iqn.g_q);
  cuda::iqn_pass(f.blas, d, L, f.target.get(), f.target_next.h2.get(), f.sampler.tau_target(), d.Np, iqn.t_cos,
                 iqn.t_phi_pre, iqn.t_phi, iqn.t_psi, iqn.t_q);
  cuda::iqn_targets_and_loss(d, iqn, f.sampler.tau(), f.sampler.actions(), f.ret, f.done, iqn, sc, nullptr);

  DeviceArray<float> aux_pre(static_cast<std::size_t>(d.B) * d.AH), aux_h(aux_pre.size()),
      pred(static_cast<std::size_t>(d.B) * d.AO), aux_loss(d.B);
  cuda::aux_forward(f.blas, d, L, f.params.get(), f.online.h2.get(), f.next_bar, aux_pre.get(), aux_h.get(),
                    pred.get(), aux_loss.get(), sc);
  DeviceArray<float> ve(static_cast<std::size_t>(d.E) * d.B * d.NA);
  cuda::ensemble_forward(f.blas, d, L, f.params.get(), f.online.z.get(), m.get(), ve.get(), sc);

  EXPECT_TRUE(f.expect_close(kC51Loss, c51.download()));
  EXPECT_TRUE(f.expect_close(kCqlLse, lse.download()));
  EXPECT_EQ(f.sampler.download_tau(0), f.cpu.slots[kIqnTau]);  // the same draws, exactly
  EXPECT_TRUE(f.expect_close(kIqnPhi, iqn.phi.download()));
  EXPECT_TRUE(f.expect_close(kIqnQuantiles, iqn.q.download()));
  EXPECT_TRUE(f.expect_close(kIqnTargetQuantiles, iqn.t_q.download()));
  EXPECT_TRUE(f.expect_close(kIqnLoss, iqn.loss.download()));
  EXPECT_TRUE(f.expect_close(kAuxPredNb, pred.download()));
  EXPECT_TRUE(f.expect_close(kAuxLoss, aux_loss.download()));
  EXPECT_TRUE(f.expect_close(kEnsembleLogits, ve.download()));
  EXPECT_EQ(iqn.astar.download(), f.cpu.astar_iqn);

  const auto& l = f.c.loss;
  const double total = sc.c51 + l.lambda_mse * sc.mse + sc.cql + l.lambda_iqn * sc.iqn + l.lambda_aux * sc.aux +
                       l.lambda_ens * sc.ens;
  const auto& cl = f.cpu.losses;
  std::printf("losses CUDA vs CPU: c51 %.7g/%.7g mse %.7g/%.7g cql %.7g/%.7g iqn %.7g/%.7g aux %.7g/%.7g "
              "ens %.7g/%.7g total %.7g/%.7g\n", sc.c51, cl.c51, sc.mse, cl.mse, sc.cql, cl.cql, sc.iqn, cl.iqn,
              sc.aux, cl.aux, sc.ens, cl.ens, total, cl.total);
  for (auto [g, c] : {std::pair{sc.c51, cl.c51}, {sc.mse, cl.mse}, {sc.cql, cl.cql}, {sc.iqn, cl.iqn},
                      {sc.aux, cl.aux}, {sc.ens, cl.ens}, {total, cl.total}})
    EXPECT_NEAR(g, c, 1e-5 * std::max(1.0, std::abs(c)));
}
