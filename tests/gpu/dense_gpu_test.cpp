// Dense layers on the device against the CPU reference: cuBLAS row-major GEMMs in full fp32 for
// every transposition, NaN travelling through relu and GEMM rows, the trunk (slots 1 and 2) of the
// default network on the same batch and weights as the CPU backend, and the fused layer kernel.
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
  // As the backend runs them: Blas::layer (the fused layer kernel at these sizes).
  cuda::LayerGemm layer1 = cuda::product(false, false, d.B, d.H, d.F, sampler.batch(), at(kEncW1),
                                         pre1.get());  // obs = batch[0:B*F]
  layer1.bias = at(kEncB1);
  layer1.relu_out = h1.get();
  blas.layer(layer1);
  cuda::LayerGemm layer2 =
      cuda::product(false, false, d.B, d.H, d.H, h1.get(), at(kEncW2), pre2.get());
  layer2.bias = at(kEncB2);
  layer2.relu_out = h2.get();
  blas.layer(layer2);
  // The pre-activations are the CPU's bit for bit (its Eigen products sum each output in order,
  // as the fused kernel does).
  auto same_bits = [](const std::vector<float>& gpu, const Mat<float>& cpu_m) {
    return gpu.size() == static_cast<std::size_t>(cpu_m.size()) &&
           std::memcmp(gpu.data(), cpu_m.data(), gpu.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same_bits(pre1.download(), cpu.pre1));
  EXPECT_TRUE(same_bits(pre2.download(), cpu.pre2));
  const double e1 = rel_error(h1.download(), cpu.slots[kHS1]),
               e2 = rel_error(h2.download(), cpu.slots[kHS2]);
  RecordProperty("h_s1_rel_error", std::to_string(e1));
  RecordProperty("h_s2_rel_error", std::to_string(e2));
  std::printf("trunk CUDA vs CPU, norm-wise relative error: h_s1 %.3g, h_s2 %.3g\n", e1, e2);
  EXPECT_LT(e1, 1e-6);
  EXPECT_LT(e2, 1e-6);
  // Deterministic: the same launch twice gives the same bits.
  DeviceArray<float> again(pre1.size()), again_h(pre1.size());
  layer2.c = again.get();
  layer2.relu_out = again_h.get();
  blas.layer(layer2);
  EXPECT_EQ(again.download(), pre2.download());
}

namespace {

struct LayerCase {
  int m, n, k;
};

bool fits(int m, int n, int k) {
  return cuda::layer_gemm_fits(cuda::product(false, false, m, n, k, nullptr, nullptr, nullptr));
}

// op(X) of a row-major matrix stored [rows, cols] (or [cols, rows] transposed), entry (i, j).
float op_at(const std::vector<float>& x, bool trans, int rows, int cols, int i, int j) {
  return trans ? x[static_cast<std::size_t>(j) * rows + i]
               : x[static_cast<std::size_t>(i) * cols + j];
}

}  // namespace

// The fused layer (one launch: GEMM, bias, relu or the gradient through one) for every
// transposition and for sizes off the kernel's tiles is, bit for bit, the host's running sum over
// the inner dimension in order (a rounded multiply, then an add), then the bias, then bias_relu's
// relu and relu_backward's mask; and two launches give the same bits.
TEST(DeviceDense, FusedLayerIsTheExactLayerWithinFloat32RoundingForEveryTransposition) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  for (const LayerCase& lc :
       {LayerCase{37, 29, 53}, LayerCase{256, 256, 256}, LayerCase{256, 256, 24},
        LayerCase{70, 51, 128}, LayerCase{1, 16, 16}, LayerCase{33, 65, 97},
        LayerCase{8192, 16, 64}, LayerCase{40, 33, 250}}) {
    ASSERT_TRUE(fits(lc.m, lc.n, lc.k));
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        std::vector<float> a(static_cast<std::size_t>(lc.m) * lc.k),
            b(static_cast<std::size_t>(lc.k) * lc.n), bias(lc.n);
        for (auto* v : {&a, &b, &bias})
          for (float& x : *v) x = nd(rng);
        const std::size_t outs = static_cast<std::size_t>(lc.m) * lc.n;
        std::vector<float> pre(outs);  // a relu's input for the gradient through it, NaN among it
        for (float& x : pre) x = nd(rng);
        pre[outs / 2] = std::numeric_limits<float>::quiet_NaN();
        auto da = to_device(a), db = to_device(b), dbias = to_device(bias), dpre = to_device(pre);
        DeviceArray<float> c(outs), relu(outs), masked(outs), c2(outs), relu2(outs);
        cuda::LayerGemm g = cuda::product(ta, tb, lc.m, lc.n, lc.k, da.get(), db.get(), c.get());
        g.bias = dbias.get();
        g.relu_out = relu.get();
        g.mask_pre = dpre.get();
        g.masked_out = masked.get();
        cuda::layer_gemm(g, nullptr);
        g.c = c2.get();
        g.relu_out = relu2.get();
        g.masked_out = nullptr;
        cuda::layer_gemm(g, nullptr);
        const auto hc = c.download(), hr = relu.download(), hm = masked.download();
        EXPECT_EQ(0, std::memcmp(hc.data(), c2.download().data(), outs * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(hr.data(), relu2.download().data(), outs * sizeof(float)));
        int off = 0;
        for (int i = 0; i < lc.m; ++i)
          for (int j = 0; j < lc.n; ++j) {
            float sum = 0.f;  // a multiply and an add per inner entry, in order
            for (int p = 0; p < lc.k; ++p) {
              const volatile float product =  // rounded before the add (never an FMA)
                  op_at(a, ta, lc.m, lc.k, i, p) * op_at(b, tb, lc.k, lc.n, p, j);
              sum = sum + product;
            }
            const float v = sum + bias[j];
            const std::size_t at = static_cast<std::size_t>(i) * lc.n + j;
            if (std::memcmp(&v, &hc[at], sizeof(float)) != 0) ++off;
            const float relu_of = v < 0.f ? 0.f : v;
            if (std::memcmp(&relu_of, &hr[at], sizeof(float)) != 0) ++off;
            const float masked_of = pre[at] <= 0.f ? 0.f : v;
            if (std::memcmp(&masked_of, &hm[at], sizeof(float)) != 0) ++off;
          }
        EXPECT_EQ(off, 0) << lc.m << "x" << lc.n << "x" << lc.k << " ta " << ta << " tb " << tb;
      }
  }
}

// Non-finite values through the fused layer give the kinds cuBLAS and the bias launch give: a NaN
// in a row of A poisons that row, an Inf weight makes its column +-Inf where the row's entry is
// non-zero and NaN where it is zero (Inf * 0), opposite infinities NaN, and relu keeps NaN and
// +Inf and turns -Inf into 0.
TEST(DeviceDense, FusedLayerGivesTheKindsOfCublasAndTheBiasLaunch) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> ud(0.5f, 1.5f);
  const int m = 45, n = 40, k = 70;
  std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n),
      bias(n);
  for (auto* v : {&a, &b, &bias})
    for (float& x : *v) x = ud(rng);
  a[3 * k + 10] = nan;  // row 3: NaN
  b[5 * n + 7] = inf;   // column 7: +Inf (every a[i, 5] > 0) ...
  a[20 * k + 5] = 0.f;  // ... but NaN in row 20 (Inf * 0)
  b[6 * n + 9] = inf;   // column 9: +Inf + -Inf = NaN
  b[8 * n + 9] = -inf;
  b[11 * n + 12] = -inf;  // column 12: -Inf, relu 0
  bias[30] = inf;         // column 30: +Inf from the bias
  auto da = to_device(a), db = to_device(b), dbias = to_device(bias);
  const std::size_t outs = static_cast<std::size_t>(m) * n;
  DeviceArray<float> c(outs), relu(outs), ref(outs), ref_relu(outs);
  cuda::LayerGemm g = cuda::product(false, false, m, n, k, da.get(), db.get(), c.get());
  g.bias = dbias.get();
  g.relu_out = relu.get();
  cuda::layer_gemm(g, nullptr);
  cuda::Blas blas;
  blas.gemm(false, false, m, n, k, 1.f, da.get(), db.get(), 0.f, ref.get());
  cuda::bias_relu(ref.get(), dbias.get(), m, n, ref_relu.get(), nullptr);
  const auto hc = c.download(), hr = relu.download(), hc_ref = ref.download(),
             hr_ref = ref_relu.download();
  auto kind = [](float x) { return std::isnan(x) ? 1 : std::isinf(x) ? (x > 0 ? 2 : 3) : 0; };
  int differ = 0;
  for (std::size_t i = 0; i < outs; ++i)
    differ += (kind(hc[i]) != kind(hc_ref[i])) + (kind(hr[i]) != kind(hr_ref[i]));
  EXPECT_EQ(differ, 0);
  EXPECT_TRUE(std::isnan(hc[3 * n + 0]));
  EXPECT_EQ(hc[0 * n + 7], inf);
  EXPECT_TRUE(std::isnan(hc[20 * n + 7]));
  EXPECT_TRUE(std::isnan(hc[0 * n + 9]));
  EXPECT_EQ(hc[0 * n + 12], -inf);
  EXPECT_EQ(hr[0 * n + 12], 0.f);
  EXPECT_EQ(hc[0 * n + 30], inf);
  EXPECT_EQ(kind(hc[0 * n + 1]), 0);
}

// The running sum overflows where the CPU's does: 0.75 max + 0.75 max is +Inf at the second term
// and stays +Inf after a -max third term that another grouping would have added first (then
// finite); and a product that overflows is Inf before it is added, so +Inf then -Inf products make
// NaN (an FMA would have added the exact product to +Inf and stayed +Inf).
TEST(DeviceDense, FusedLayerOverflowsAtTheTermTheCpuSumDoes) {
  const float big = std::numeric_limits<float>::max();
  const int m = 16, n = 16, k = 16;
  std::vector<float> a(static_cast<std::size_t>(m) * k, 1.f),
      b(static_cast<std::size_t>(k) * n, 0.f);
  for (int i = 0; i < m; ++i) a[static_cast<std::size_t>(i) * k + 3] = a[i * k + 4] = 2.f;
  for (int j = 0; j < 8; ++j) {  // columns 0-7: the running sum overflows
    b[0 * n + j] = 0.75f * big;
    b[1 * n + j] = 0.75f * big;
    b[2 * n + j] = -big;
  }
  for (int j = 8; j < n; ++j) {  // columns 8-15: the products overflow, with opposite signs
    b[3 * n + j] = 0.75f * big;
    b[4 * n + j] = -0.75f * big;
  }
  auto da = to_device(a), db = to_device(b);
  DeviceArray<float> c(static_cast<std::size_t>(m) * n);
  cuda::layer_gemm(cuda::product(false, false, m, n, k, da.get(), db.get(), c.get()), nullptr);
  const auto h = c.download();
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const float v = h[static_cast<std::size_t>(i) * n + j];
      if (j < 8)
        EXPECT_EQ(v, std::numeric_limits<float>::infinity()) << i << "," << j;
      else
        EXPECT_TRUE(std::isnan(v)) << i << "," << j;
    }
}

// The step's layers on both backends are the same numbers: the fused layer is the CPU backend's
// Eigen product plus bias bit for bit where Eigen's kernel sums each output in order (every
// column when their count is a multiple of its 8-wide panels on this SSE2 build: the encoder's
// layers, the bottleneck and the advantage head; not the value head's last 3 of 51 columns).
TEST(DeviceDense, FusedLayerIsTheCpuBackendsProductBitForBit) {
  std::mt19937 rng(15);
  std::normal_distribution<float> nd;
  for (const LayerCase& lc : {LayerCase{256, 256, 24}, LayerCase{256, 256, 256},
                              LayerCase{256, 128, 256}, LayerCase{256, 408, 128}}) {
    Mat<float> a(lc.m, lc.k), b(lc.k, lc.n);
    Eigen::RowVectorXf bias(lc.n);
    for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = nd(rng);
    for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = nd(rng);
    for (Eigen::Index i = 0; i < bias.size(); ++i) bias[i] = nd(rng);
    Mat<float> expect(lc.m, lc.n);
    expect.noalias() = a * b;  // as CpuModel's stages write their layers
    expect.rowwise() += bias;
    auto da = to_device(std::vector<float>(a.data(), a.data() + a.size()));
    auto db = to_device(std::vector<float>(b.data(), b.data() + b.size()));
    auto dbias = to_device(std::vector<float>(bias.data(), bias.data() + bias.size()));
    DeviceArray<float> c(static_cast<std::size_t>(lc.m) * lc.n);
    cuda::LayerGemm g = cuda::product(false, false, lc.m, lc.n, lc.k, da.get(), db.get(), c.get());
    g.bias = dbias.get();
    cuda::layer_gemm(g, nullptr);
    const auto h = c.download();
    EXPECT_EQ(0, std::memcmp(h.data(), expect.data(), h.size() * sizeof(float)))
        << lc.m << "x" << lc.n << "x" << lc.k;
  }
}

// Blas::layer takes the fused launch for small layers and cuBLAS with the bias launch past them:
// both routes give the layer within float32 rounding of each other.
TEST(DeviceDense, LayerGivesTheSameLayerOnEitherRoute) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd;
  const int m = 4096, n = 256, k = 128;
  ASSERT_FALSE(fits(m, n, k));  // cuBLAS in Blas::layer
  std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n),
      bias(n);
  for (auto* v : {&a, &b, &bias})
    for (float& x : *v) x = nd(rng);
  auto da = to_device(a), db = to_device(b), dbias = to_device(bias);
  const std::size_t outs = static_cast<std::size_t>(m) * n;
  DeviceArray<float> c(outs), relu(outs);
  cuda::LayerGemm g = cuda::product(false, false, m, n, k, da.get(), db.get(), c.get());
  g.bias = dbias.get();
  g.relu_out = relu.get();
  cuda::Blas blas;
  blas.layer(g);
  // The same layer in row blocks small enough for the fused kernel.
  DeviceArray<float> c_small(outs), relu_small(outs);
  const int rows = 256;
  ASSERT_TRUE(fits(rows, n, k));
  for (int r = 0; r < m; r += rows) {
    cuda::LayerGemm part = g;
    part.m = rows;
    part.a = da.get() + static_cast<std::size_t>(r) * k;
    part.c = c_small.get() + static_cast<std::size_t>(r) * n;
    part.relu_out = relu_small.get() + static_cast<std::size_t>(r) * n;
    blas.layer(part);
  }
  EXPECT_LT(rel_error(c_small.download(), c.download()), 1e-6);
  EXPECT_LT(rel_error(relu_small.download(), relu.download()), 1e-6);
}

// A layer whose output is a sum of parts (the branch concat's gradient: value + advantage + the
// ensemble heads' terms, the advantage product computed here): the fused launch is, bit for bit,
// the host's in-order product (a rounded multiply, then an add) summed with the other parts in
// order, non-finite parts included; the cuBLAS route (a larger batch) writes the product into its
// part and gives the same sums within float32 rounding.
TEST(DeviceDense, ASumOfPartsIsTheProductAddedInItsPlace) {
  std::mt19937 rng(17);
  std::normal_distribution<float> nd;
  const int n = 128, k = 408, parts = 6, product_part = 1;
  for (int m : {256, 4096}) {
    std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(n) * k);
    const std::size_t outs = static_cast<std::size_t>(m) * n;
    std::vector<float> p(outs * parts);
    for (auto* v : {&a, &b, &p})
      for (float& x : *v) x = nd(rng);
    p[3] = std::numeric_limits<float>::quiet_NaN();                                    // part 0
    p[2 * outs + 5] = std::numeric_limits<float>::infinity();                          // part 2
    a[static_cast<std::size_t>(7) * k + 9] = std::numeric_limits<float>::quiet_NaN();  // row 7
    auto da = to_device(a), db = to_device(b), dp = to_device(p);
    DeviceArray<float> c(outs);
    // c = a b^T (the advantage gradient's transposes) in part 1's place.
    cuda::LayerGemm g = cuda::product(false, true, m, n, k, da.get(), db.get(), c.get());
    g.parts = dp.get();
    g.part_count = parts;
    g.product_part = product_part;
    const bool fused = m == 256;
    EXPECT_EQ(cuda::layer_gemm_fits(g), fused) << m;
    cuda::LayerGemm plain = g;
    plain.parts = nullptr;
    EXPECT_FALSE(cuda::layer_gemm_fits(plain));  // 408 inner entries: only as a sum of parts
    cuda::Blas blas;
    blas.layer(g);
    const auto got = c.download();
    std::vector<float> want(outs);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        float prod = 0.f;
        for (int q = 0; q < k; ++q) {
          const volatile float term =
              a[static_cast<std::size_t>(i) * k + q] * b[static_cast<std::size_t>(j) * k + q];
          prod = prod + term;
        }
        const std::size_t at = static_cast<std::size_t>(i) * n + j;
        float sum = p[at];
        for (int x = 1; x < parts; ++x) sum += x == product_part ? prod : p[x * outs + at];
        want[at] = sum;
      }
    EXPECT_TRUE(std::isnan(got[3]));  // part 0's NaN
    EXPECT_TRUE(std::isinf(got[5]));  // part 2's Inf
    EXPECT_TRUE(std::isnan(got[static_cast<std::size_t>(7) * n]));
    if (fused) {
      for (std::size_t i = 0; i < outs; ++i)
        ASSERT_TRUE((std::isnan(got[i]) && std::isnan(want[i])) ||
                    std::memcmp(&got[i], &want[i], sizeof(float)) == 0)
            << i << ": " << got[i] << " vs " << want[i];
    } else {
      std::vector<float> finite_got, finite_want;
      for (std::size_t i = 0; i < outs; ++i) {
        ASSERT_EQ(std::isfinite(got[i]), std::isfinite(want[i])) << i;
        if (std::isfinite(got[i])) {
          finite_got.push_back(got[i]);
          finite_want.push_back(want[i]);
        }
      }
      EXPECT_LT(rel_error(finite_got, finite_want), 1e-5);
    }
  }
}

// The trunk's steps as a layer's epilogue (the captured step's bw_d_h_s2: the bottleneck's input
// gradient, the aux and IQN heads' sums, the copies, the gradient through the relu before it), on
// the fused route (the default batch) and on cuBLAS's (a larger one): the first copy is the
// layer alone bit for bit (the product in the CPU's order on the fused route: `cpu_order` gives
// the same bits without the steps), each later state its step from the one before, and the relu
// gradient is the stored sum where the relu's input is positive or NaN and 0 elsewhere.
TEST(DeviceDense, TheTrunksStepsFollowTheLayerOnEitherRoute) {
  std::mt19937 rng(19);
  std::normal_distribution<float> nd;
  const int n = 256, k = 128;
  const float lambda_aux = 0.1f, lambda_iqn = 0.5f;
  for (int m : {256, 4096}) {
    const std::size_t outs = static_cast<std::size_t>(m) * n;
    std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(n) * k),
        aux(outs), iqn(outs), pre(outs);
    for (auto* v : {&a, &b, &aux, &iqn, &pre})
      for (float& x : *v) x = nd(rng);
    pre[9] = std::numeric_limits<float>::quiet_NaN();
    auto da = to_device(a), db = to_device(b), daux = to_device(aux), diqn = to_device(iqn),
         dpre = to_device(pre);
    DeviceArray<float> alone(outs), c(outs), main_copy(outs), aux_copy(outs), trunk_m(outs),
        grad_pre(outs);
    cuda::Blas blas;
    cuda::LayerGemm g = cuda::product(false, true, m, n, k, da.get(), db.get(), alone.get());
    g.cpu_order = true;
    blas.layer(g);
    g.c = c.get();
    g.trunk =
        cuda::TrunkSteps{main_copy.get(), lambda_aux,    daux.get(), aux_copy.get(), lambda_iqn,
                         diqn.get(),      trunk_m.get(), dpre.get(), grad_pre.get()};
    EXPECT_EQ(cuda::layer_gemm_fits(g), m == 256);
    blas.layer(g);
    const auto h_alone = alone.download(), h_main = main_copy.download(),
               h_aux = aux_copy.download(), h_m = trunk_m.download(), h_c = c.download(),
               h_grad = grad_pre.download();
    EXPECT_EQ(0, std::memcmp(h_main.data(), h_alone.data(), outs * sizeof(float))) << m;
    EXPECT_EQ(0, std::memcmp(h_c.data(), h_m.data(), outs * sizeof(float))) << m;
    std::vector<float> want_aux(outs), want_m(outs);
    for (std::size_t i = 0; i < outs; ++i) {
      want_aux[i] = h_main[i] + lambda_aux * aux[i];
      want_m[i] = h_aux[i] + lambda_iqn * iqn[i];
      const float want_grad = pre[i] <= 0.f ? 0.f : h_c[i];
      ASSERT_EQ(0, std::memcmp(&h_grad[i], &want_grad, sizeof(float))) << m << " at " << i;
    }
    EXPECT_LT(rel_error(h_aux, want_aux), 1e-6) << m;
    EXPECT_LT(rel_error(h_m, want_m), 1e-6) << m;
    EXPECT_EQ(h_grad[9], h_c[9]);  // a NaN input passes the gradient
  }
}
