// Dense layers on the device against the CPU reference: cuBLAS row-major GEMMs in full fp32 for
// every transposition, NaN travelling through relu and GEMM rows, and the trunk (slots 1 and 2)
// of the default network on the same batch and weights as the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "batch_sampler.h"
#include "data/bars.h"
#include "dense.h"
#include "device_array.h"
#include "model/cpu_model.h"
#include "reference/reference_math.h"

using namespace nanscope;
using nanscope::cuda::DeviceArray;

namespace {

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    n += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(d / n);
}

DeviceArray<float> to_device(const std::vector<float>& h) {
  DeviceArray<float> d(h.size());
  d.upload(h);
  return d;
}

}  // namespace

TEST(DeviceDense, GemmMatchesEigenForEveryTransposition) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  cuda::Blas blas;
  const int m = 37, n = 29, k = 53;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Mat<float> A = ta ? Mat<float>(k, m) : Mat<float>(m, k),
                 B = tb ? Mat<float>(n, k) : Mat<float>(k, n);
      for (Eigen::Index i = 0; i < A.size(); ++i) A.data()[i] = nd(rng);
      for (Eigen::Index i = 0; i < B.size(); ++i) B.data()[i] = nd(rng);
      Mat<float> C0 = Mat<float>::Constant(m, n, 0.5f);
      Mat<float> expect =
          (ta ? Mat<float>(A.transpose()) : A) * (tb ? Mat<float>(B.transpose()) : B);
      expect.array() += 0.5f;  // beta = 1 accumulates into C
      auto dA = to_device(std::vector<float>(A.data(), A.data() + A.size()));
      auto dB = to_device(std::vector<float>(B.data(), B.data() + B.size()));
      auto dC = to_device(std::vector<float>(C0.data(), C0.data() + C0.size()));
      blas.gemm(ta, tb, m, n, k, 1.0f, dA.get(), dB.get(), 1.0f, dC.get());
      EXPECT_LT(rel_error(dC.download(),
                          std::vector<float>(expect.data(), expect.data() + expect.size())),
                1e-6)
          << "ta " << ta << " tb " << tb;
    }
}

TEST(DeviceDense, NaNTravelsThroughReluAndGemmRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  auto x = to_device({-1.f, 0.f, 2.f, nan, inf, -inf});
  DeviceArray<float> y(6);
  cuda::reference::relu(x.get(), y.get(), 6, nullptr);
  auto h = y.download();
  EXPECT_EQ(h[0], 0.f);
  EXPECT_EQ(h[2], 2.f);
  EXPECT_TRUE(std::isnan(h[3]));
  EXPECT_EQ(h[4], inf);
  EXPECT_EQ(h[5], 0.f);
  // A NaN in row 1 of A poisons row 1 of C only (zero weights do not hide it: NaN * 0 = NaN).
  cuda::Blas blas;
  auto a = to_device({1.f, 2.f, nan, 0.f});  // [2, 2]
  auto b = to_device({0.f, 0.f, 0.f, 0.f});  // [2, 2]
  DeviceArray<float> c(4);
  cudaMemset(c.get(), 0, 4 * sizeof(float));
  blas.gemm(false, false, 2, 2, 2, 1.f, a.get(), b.get(), 0.f, c.get());
  auto hc = c.download();
  EXPECT_EQ(hc[0], 0.f);
  EXPECT_EQ(hc[1], 0.f);
  EXPECT_TRUE(std::isnan(hc[2]));
  EXPECT_TRUE(std::isnan(hc[3]));
}

// The fused layer tails give the separate launches' results bit for bit: bias_relu is add_bias_rows
// then relu (NaN, +Inf and -Inf among the values and the biases), add_bias_blocks is add_bias_rows
// per block of rows with that block's bias row.
TEST(DeviceDense, FusedBiasAndReluAreTheSeparateLaunchesBitForBit) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  auto values = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    for (int k = 0; k < 7; ++k) v[rng() % n] = specials[rng() % 3];
    return v;
  };
  auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  const int rows = 67, cols = 45, blocks = 4;
  const auto x = values(static_cast<std::size_t>(rows) * cols), bias = values(cols);
  auto pre_a = to_device(x), pre_b = to_device(x), dbias = to_device(bias);
  DeviceArray<float> out_a(x.size()), out_b(x.size());
  cuda::add_bias_rows(pre_a.get(), dbias.get(), rows, cols, nullptr);
  cuda::reference::relu(pre_a.get(), out_a.get(), x.size(), nullptr);
  cuda::bias_relu(pre_b.get(), dbias.get(), rows, cols, out_b.get(), nullptr);
  EXPECT_TRUE(same_bits(pre_a.download(), pre_b.download()));
  EXPECT_TRUE(same_bits(out_a.download(), out_b.download()));

  const auto y = values(static_cast<std::size_t>(blocks) * rows * cols),
             heads = values(static_cast<std::size_t>(blocks) * cols);
  auto y_a = to_device(y), y_b = to_device(y), dheads = to_device(heads);
  for (int b = 0; b < blocks; ++b)
    cuda::add_bias_rows(y_a.get() + static_cast<std::size_t>(b) * rows * cols,
                        dheads.get() + b * cols, rows, cols, nullptr);
  cuda::add_bias_blocks(y_b.get(), dheads.get(), blocks, rows, cols, nullptr);
  EXPECT_TRUE(same_bits(y_a.download(), y_b.download()));
  EXPECT_FALSE(same_bits(y_a.download(), y));  // the biases were added
}

TEST(DeviceDense, TrunkMatchesTheCpuBackendOnTheSameBatchAndWeights) {
  Config c;  // default sizes
  auto bars = generate_synthetic_bars(c.data, c.run.seed, c.data.bars);
  auto ts = build_transitions(bars, plan_folds(c.data.bars, c.run.folds, c.data.n_step)[1], c);
  CpuModel<float> cpu(c);
  cpu.load_fold(ts);
  cpu.sample(StepKey{c.run.seed, 1, 7, 407});
  cpu.stage_trunk();

  cuda::DeviceSampler sampler(
      cuda::SamplerShape{c.model.batch, c.model.iqn_n, c.model.iqn_n_target, c.model.iqn_k, true});
  sampler.load_fold(ts);
  sampler.sample(c.run.seed, 1, 7);
  auto params = to_device(cpu.params);  // the same flat layout on both backends
  const Dims& d = cpu.d;
  auto at = [&](ParamId id) { return params.get() + cpu.layout[id].offset; };
  cuda::Blas blas;
  DeviceArray<float> pre1(static_cast<std::size_t>(d.B) * d.H), h1(pre1.size()), pre2(pre1.size()),
      h2(pre1.size());
  blas.gemm(false, false, d.B, d.H, d.F, 1.f, sampler.batch(), at(kEncW1), 0.f,
            pre1.get());  // obs = batch[0:B*F]
  cuda::add_bias_rows(pre1.get(), at(kEncB1), d.B, d.H, nullptr);
  cuda::reference::relu(pre1.get(), h1.get(), h1.size(), nullptr);
  blas.gemm(false, false, d.B, d.H, d.H, 1.f, h1.get(), at(kEncW2), 0.f, pre2.get());
  cuda::add_bias_rows(pre2.get(), at(kEncB2), d.B, d.H, nullptr);
  cuda::reference::relu(pre2.get(), h2.get(), h2.size(), nullptr);
  const double e1 = rel_error(h1.download(), cpu.slots[kHS1]),
               e2 = rel_error(h2.download(), cpu.slots[kHS2]);
  RecordProperty("h_s1_rel_error", std::to_string(e1));
  RecordProperty("h_s2_rel_error", std::to_string(e2));
  std::printf("trunk CUDA vs CPU, norm-wise relative error: h_s1 %.3g, h_s2 %.3g\n", e1, e2);
  EXPECT_LT(e1, 1e-6);
  EXPECT_LT(e2, 1e-6);
  // Deterministic: the same launch twice gives the same bits.
  DeviceArray<float> again(pre1.size());
  blas.gemm(false, false, d.B, d.H, d.H, 1.f, h1.get(), at(kEncW2), 0.f, again.get());
  cuda::add_bias_rows(again.get(), at(kEncB2), d.B, d.H, nullptr);
  EXPECT_EQ(again.download(), pre2.download());
}
