// The rest of the forward on the device against the CPU backend: slots 9, 11-20 and the loss
// scalars, default size, same batch, draws and weights; the fused IQN pass against its two layers.
#include <gtest/gtest.h>

#include <algorithm>

#include "device_copy.h"
#include "forward_losses.h"
#include "gpu_fixture.h"

using namespace nanscope;
using nanscope::cuda::DeviceArray;

TEST(DeviceForward, LossesIqnAuxEnsembleAndTotalMatchTheCpuBackend) {
  test::GpuFixture f;
  auto fw = f.run_forward();
  auto& iqn = fw->iqn;
  auto& sc = fw->sc;
  auto& c51 = fw->c51;
  auto& lse = fw->lse;
  auto& pred = fw->pred;
  auto& aux_loss = fw->aux_loss;
  auto& ve = fw->ve;
  EXPECT_TRUE(f.expect_close(kC51Loss, c51.download()));
  EXPECT_TRUE(f.expect_close(kCqlLse, lse.download()));
  EXPECT_EQ(test::device_copy(f.sampler.tau(), f.cpu.slots[kIqnTau].size()),
            f.cpu.slots[kIqnTau]);  // the same draws, exactly
  EXPECT_TRUE(f.expect_close(kIqnPhi, iqn.phi.download()));
  EXPECT_TRUE(f.expect_close(kIqnQuantiles, iqn.q.download()));
  EXPECT_TRUE(f.expect_close(kIqnTargetQuantiles, iqn.t_q.download()));
  EXPECT_TRUE(f.expect_close(kIqnLoss, iqn.loss.download()));
  EXPECT_TRUE(f.expect_close(kAuxPredNb, pred.download()));
  EXPECT_TRUE(f.expect_close(kAuxLoss, aux_loss.download()));
  EXPECT_TRUE(f.expect_close(kEnsembleLogits, ve.download()));
  EXPECT_EQ(iqn.astar.download(), f.cpu.astar_iqn);

  const auto& l = f.c.loss;
  const double total = sc.c51 + l.lambda_mse * sc.mse + sc.cql + l.lambda_iqn * sc.iqn +
                       l.lambda_aux * sc.aux + l.lambda_ens * sc.ens;
  const auto& cl = f.cpu.losses;
  std::printf(
      "losses CUDA vs CPU: c51 %.7g/%.7g mse %.7g/%.7g cql %.7g/%.7g iqn %.7g/%.7g aux %.7g/%.7g "
      "ens %.7g/%.7g total %.7g/%.7g\n",
      sc.c51, cl.c51, sc.mse, cl.mse, sc.cql, cl.cql, sc.iqn, cl.iqn, sc.aux, cl.aux, sc.ens,
      cl.ens, total, cl.total);
  for (auto [g, c] : {std::pair{sc.c51, cl.c51},
                      {sc.mse, cl.mse},
                      {sc.cql, cl.cql},
                      {sc.iqn, cl.iqn},
                      {sc.aux, cl.aux},
                      {sc.ens, cl.ens},
                      {total, cl.total}})
    EXPECT_NEAR(g, c, 1e-5 * std::max(1.0, std::abs(c)));
}

TEST(DeviceForward, TheFusedIqnPassGivesTheTwoLayersApartBitForBit) {
  // iqn_pass makes phi's bias, relu and psi in one kernel, in place over the cosine GEMM's
  // output; the online pass runs the two layers apart (phi's call site is between them). Same
  // inputs, the same psi and q bit for bit, at every sample count.
  test::GpuFixture f;
  const auto& L = f.cpu.layout;
  const Dims& d = f.d;
  for (int n : {d.N, d.K, 3}) {
    cuda::IqnBuffers fused(d), apart(d);
    cuda::iqn_pass(f.blas, d, L, f.params.get(), f.online.h2.get(), f.sampler.tau(), n, fused.cos,
                   fused.psi, fused.q);
    cuda::iqn_embedding(f.blas, d, L, f.params.get(), f.sampler.tau(), d.B * n, apart.cos,
                        apart.phi_pre, apart.phi);
    cuda::iqn_quantile_layer(f.blas, d, L, f.params.get(), f.online.h2.get(), n, apart.phi,
                             apart.psi, apart.q);
    const std::size_t rows_h = static_cast<std::size_t>(d.B) * n * d.H;
    auto head = [](const DeviceArray<float>& a, std::size_t count) {
      auto v = a.download();
      v.resize(count);
      return v;
    };
    EXPECT_TRUE(head(fused.psi, rows_h) == head(apart.psi, rows_h)) << n;
    const std::size_t rows_a = static_cast<std::size_t>(d.B) * n * d.A;
    EXPECT_TRUE(head(fused.q, rows_a) == head(apart.q, rows_a)) << n;
    // Not a comparison of two zeros: psi has non-zero and zero (relu'd) values.
    const auto psi = head(fused.psi, rows_h);
    EXPECT_GT(std::count(psi.begin(), psi.end(), 0.f), 0);
    EXPECT_GT(*std::max_element(psi.begin(), psi.end()), 0.f);
    const auto phi = head(apart.phi, rows_h);
    EXPECT_GT(std::count(phi.begin(), phi.end(), 0.f), 0);
  }
}
