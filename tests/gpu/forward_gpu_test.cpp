// The rest of the forward on the device against the CPU backend: slots 9, 11-20 and the loss
// scalars, default size, same batch, draws and weights; the fused IQN pass against its two layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

TEST(DeviceForward, GreedyActionsAndTargetsInOneLaunchAreTheTwoLaunchesBitForBit) {
  // The step's iqn_greedy_targets against iqn_greedy then iqn_targets on the fixture's passes:
  // with g_q as the greedy pass leaves it in the step (no output bias; the kernel adds it) and
  // with the bias already in g_q; and with a NaN in one sample's greedy quantiles (that branch's
  // targets NaN).
  test::GpuFixture f;
  const auto& L = f.cpu.layout;
  const Dims& d = f.d;
  auto fw = f.run_forward();
  cuda::IqnBuffers& iqn = fw->iqn;
  std::vector<float> g_q = iqn.g_q.download();
  g_q[(static_cast<std::size_t>(7) * d.K + 3) * d.A + 0] = std::numeric_limits<float>::quiet_NaN();
  DeviceArray<float> biased(g_q.size()), unbiased(g_q.size());
  biased.upload(g_q);
  cuda::IqnBuffers fresh(d);  // the fixture's g_work holds psi now: the embedding again
  cuda::iqn_pass_embedding(f.blas, d, L, f.params.get(), f.sampler.tau_greedy(), d.K, fresh.g_cos,
                           fresh.g_work);
  cuda::iqn_pass_quantiles(f.blas, d, L, f.params.get(), f.online_next.h2.get(), d.K, fresh.g_work,
                           unbiased, false);
  std::vector<float> raw = unbiased.download();
  raw[(static_cast<std::size_t>(7) * d.K + 3) * d.A + 0] = std::numeric_limits<float>::quiet_NaN();
  unbiased.upload(raw);
  const std::size_t n_t = static_cast<std::size_t>(d.B) * d.D * d.Np;
  DeviceArray<std::int32_t> astar(static_cast<std::size_t>(d.B) * d.D);
  DeviceArray<float> two(n_t), one_biased(n_t), one_raw(n_t);
  cuda::iqn_greedy(d, biased.get(), astar.get(), nullptr);
  cuda::iqn_targets(d, iqn.t_q.get(), astar.get(), f.ret, f.done, two.get(), nullptr);
  cuda::iqn_greedy_targets(d, biased.get(), nullptr, iqn.t_q.get(), f.ret, f.done, one_biased.get(),
                           nullptr);
  cuda::iqn_greedy_targets(d, unbiased.get(), f.params.get() + L[kIqnOutB].offset, iqn.t_q.get(),
                           f.ret, f.done, one_raw.get(), nullptr);
  const std::vector<float> t_two = two.download(), t_biased = one_biased.download(),
                           t_raw = one_raw.download();
  EXPECT_EQ(0, std::memcmp(t_two.data(), t_biased.data(), n_t * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(t_two.data(), t_raw.data(), n_t * sizeof(float)));
  EXPECT_EQ(astar.download()[static_cast<std::size_t>(7) * d.D], -1);
  EXPECT_TRUE(std::isnan(t_two[static_cast<std::size_t>(7) * d.D * d.Np]));
  EXPECT_FALSE(std::isnan(t_two[0]));
}
