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
  EXPECT_TRUE(f.expect_close(kIqnCosFeatures, iqn.cos.download()));
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

namespace {
// q = psi Wq + bq on the host, each output one running sum over the hidden units in order with a
// rounded multiply and an add per term: the CPU backend's product (its Eigen build has no FMA).
std::vector<float> host_quantile_layer(const std::vector<float>& psi, const std::vector<float>& w,
                                       const std::vector<float>& bias, std::size_t rows, int H,
                                       int A) {
  std::vector<float> q(rows * static_cast<std::size_t>(A));
  for (std::size_t r = 0; r < rows; ++r)
    for (int a = 0; a < A; ++a) {
      volatile float acc = 0.f;  // each product and sum rounded to float, in order
      for (int h = 0; h < H; ++h) {
        const volatile float term = psi[r * H + h] * w[static_cast<std::size_t>(h) * A + a];
        acc = acc + term;
      }
      q[r * A + a] = acc + bias[static_cast<std::size_t>(a)];
    }
  return q;
}

// Equal bits, or NaN on both sides (a NaN's payload is not the CPU's business).
testing::AssertionResult same_values(const std::vector<float>& got,
                                     const std::vector<float>& want) {
  if (got.size() != want.size()) return testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (!both_nan && std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return testing::AssertionFailure() << "index " << i << ": " << got[i] << " vs " << want[i];
  }
  return testing::AssertionSuccess();
}
}  // namespace

TEST(DeviceForward, TheFusedIqnPassIsTheLayersApartWithTheCpuBackendsProduct) {
  // iqn_pass makes phi's bias, relu, psi and the output layer in one kernel after the cosine
  // GEMM, storing neither phi nor psi; the online pass runs the layers apart (phi's call site is
  // between them). Same inputs: the pass's q is the host's in-order product of the psi that the
  // layers apart make, plus the bias, bit for bit, at every sample count; then again with a NaN
  // in h2, an Inf in the embedding's weights and a NaN in the output layer's weights, which must
  // leave the same non-finite values in the same places.
  test::GpuFixture f;
  const auto& L = f.cpu.layout;
  const Dims& d = f.d;
  auto download_head = [](const DeviceArray<float>& a, std::size_t count) {
    auto v = a.download();
    v.resize(count);
    return v;
  };
  auto compare = [&](const Dims& d, int n) -> int {  // the non-finite outputs seen
    cuda::IqnBuffers fused(d), apart(d);
    cuda::iqn_pass(f.blas, d, L, f.params.get(), f.online.h2.get(), f.sampler.tau(), n, fused.cos,
                   fused.psi, fused.q);
    cuda::iqn_embedding(f.blas, d, L, f.params.get(), f.sampler.tau(), d.B * n, apart.cos,
                        apart.phi_pre, apart.phi);
    cuda::iqn_quantile_layer(f.blas, d, L, f.params.get(), f.online.h2.get(), n, apart.phi,
                             apart.psi, apart.q);
    const std::size_t rows = static_cast<std::size_t>(d.B) * n;
    const auto psi = download_head(apart.psi, rows * d.H);
    const auto params = f.params.download();
    const std::vector<float> w(params.begin() + static_cast<long>(L[kIqnOutW].offset),
                               params.begin() + static_cast<long>(L[kIqnOutW].offset) + d.H * d.A);
    const std::vector<float> b(params.begin() + static_cast<long>(L[kIqnOutB].offset),
                               params.begin() + static_cast<long>(L[kIqnOutB].offset) + d.A);
    const auto q = download_head(fused.q, rows * d.A);
    EXPECT_TRUE(same_values(q, host_quantile_layer(psi, w, b, rows, d.H, d.A))) << n;
    // Not a comparison of zeros: psi has non-zero and zero (relu'd) values.
    EXPECT_GT(std::count(psi.begin(), psi.end(), 0.f), 0);
    EXPECT_GT(*std::max_element(psi.begin(), psi.end()), 0.f);
    return static_cast<int>(
        std::count_if(q.begin(), q.end(), [](float v) { return !std::isfinite(v); }));
  };
  for (int n : {d.N, d.K, 3}) EXPECT_EQ(compare(d, n), 0) << n;
  // A batch whose rows are not whole tiles of the kernel (37 x 3 = 111 rows): the last tile's
  // missing rows are never read or written.
  Dims small = d;
  small.B = 37;
  EXPECT_EQ(compare(small, 3), 0);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> h2 = f.online.h2.download();
  h2[static_cast<std::size_t>(5) * d.H + 7] = nan;  // sample 5: every quantile row of it
  f.online.h2.upload(h2);
  std::vector<float> params = f.params.download();
  params[L[kIqnPhiW].offset + static_cast<std::size_t>(2) * d.H + 11] = inf;  // cos 2 -> unit 11
  params[L[kIqnOutW].offset + static_cast<std::size_t>(13) * d.A + 4] = nan;  // unit 13 -> q 4
  f.params.upload(params);
  EXPECT_GT(compare(d, d.N), 0);
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
  cuda::IqnBuffers fresh(d);
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

TEST(DeviceForward, TheIqnTailInOneLaunchIsTheThreeLaunchesBitForBit) {
  // The captured step's iqn_tail (targets, per-sample loss and batch mean in one launch, the last
  // block folding the mean) against iqn_greedy_targets, iqn_loss and mean_into: the same targets,
  // losses and mean bit for bit, launched twice (the arrival count is ready again), then with a
  // NaN in one sample's greedy quantiles and another's online quantiles.
  test::GpuFixture f;
  const Dims& d = f.d;
  auto fw = f.run_forward();
  cuda::IqnBuffers& iqn = fw->iqn;
  const std::size_t n_t = static_cast<std::size_t>(d.B) * d.D * d.Np;
  auto check = [&](const char* what) {
    DeviceArray<float> targets(n_t), loss(static_cast<std::size_t>(d.B));
    DeviceArray<double> means(3);
    cuda::iqn_greedy_targets(d, iqn.g_q.get(), nullptr, iqn.t_q.get(), f.ret, f.done, targets.get(),
                             nullptr);
    cuda::iqn_loss(d, iqn.q.get(), f.sampler.tau(), targets.get(), f.sampler.actions(), loss.get(),
                   nullptr);
    cuda::mean_into(loss.get(), d.B, 1.0, means.get(), nullptr);
    // Markers first: what the launch leaves is its own.
    iqn.targets.upload(std::vector<float>(n_t, -7.f));
    iqn.loss.upload(std::vector<float>(static_cast<std::size_t>(d.B), -7.f));
    cuda::iqn_tail(d, iqn, nullptr, f.ret, f.done, f.sampler.tau(), f.sampler.actions(),
                   means.get() + 1, nullptr);
    cuda::iqn_tail(d, iqn, nullptr, f.ret, f.done, f.sampler.tau(), f.sampler.actions(),
                   means.get() + 2, nullptr);
    EXPECT_TRUE(same_values(iqn.targets.download(), targets.download())) << what;
    const auto l1 = loss.download(), l2 = iqn.loss.download();
    EXPECT_TRUE(same_values(l2, l1)) << what;
    const auto m = means.download();
    for (int k = 1; k < 3; ++k)
      EXPECT_TRUE((std::isnan(m[0]) && std::isnan(m[k])) ||
                  std::memcmp(&m[0], &m[k], sizeof(double)) == 0)
          << what << ": " << m[0] << " vs " << m[k];
    return std::make_pair(l1, m[0]);
  };
  const double clean_mean = check("clean").second;
  EXPECT_TRUE(std::isfinite(clean_mean));
  EXPECT_GT(clean_mean, 0.0);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> g_q = iqn.g_q.download();
  g_q[(static_cast<std::size_t>(7) * d.K + 3) * d.A + 0] = nan;  // sample 7, branch 0's greedy
  iqn.g_q.upload(g_q);
  std::vector<float> q = iqn.q.download();
  const std::size_t at9 = static_cast<std::size_t>(9) * d.N * d.A;
  std::fill(q.begin() + static_cast<long>(at9), q.begin() + static_cast<long>(at9) + d.A, nan);
  iqn.q.upload(q);
  const auto [nan_loss, nan_mean] = check("with NaN");
  EXPECT_TRUE(std::isnan(nan_loss[7]));
  EXPECT_TRUE(std::isnan(nan_loss[9]));
  EXPECT_FALSE(std::isnan(nan_loss[8]));
  EXPECT_TRUE(std::isnan(nan_mean));
}
