// The device path's bfloat16 and float16 checks (cuda/fused_check.cuh) against the host path's
// (core/half_float.h, model/host_check.h) over crafted buffers: NaNs with payloads, both
// infinities, the largest finite values, subnormals, zeros of both signs, at lengths and offsets
// that reach the vector loop, its tail and the unaligned path; checked inside a CUDA graph and
// replayed. Kinds and counts bit for bit, the health row's range, counts and type margins exactly
// and its moments within float rounding, the first fire's copy the values widened.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half_float.h"
#include "core/sentinel.h"
#include "core/slot_health.h"
#include "model/host_check.h"
#include "sentinel_check.h"

using namespace nanscope;
using nanscope::cuda::BankShape;
using nanscope::cuda::DeviceBank;

namespace {

struct HalfCase {
  const char* name;
  ElementType type;
};

// A buffer of 16-bit patterns: random finite values, then the crafted ones spread through it.
std::vector<std::uint16_t> crafted(ElementType type, std::size_t n, int bad, std::mt19937& rng) {
  const bool bf = type == ElementType::BFloat16;
  std::vector<std::uint16_t> x(n);
  std::uniform_int_distribution<int> mantissa(0, bf ? 0x7f : 0x3ff);
  std::uniform_int_distribution<int> exponent(bf ? 120 : 10, bf ? 134 : 20);
  for (auto& v : x)
    v = static_cast<std::uint16_t>((rng() & 0x8000) | (exponent(rng) << (bf ? 7 : 10)) |
                                   mantissa(rng));
  const std::uint16_t finite[] = {0x0000,
                                  0x8000,
                                  0x0001,
                                  0x8001,
                                  static_cast<std::uint16_t>(bf ? 0x007f : 0x03ff),
                                  static_cast<std::uint16_t>(bf ? 0x0080 : 0x0400),
                                  static_cast<std::uint16_t>(bf ? 0x7f7f : 0x7bff),
                                  static_cast<std::uint16_t>(bf ? 0xff7f : 0xfbff)};
  const std::uint16_t nonfinite[] = {static_cast<std::uint16_t>(bf ? 0x7fc0 : 0x7e00),
                                     static_cast<std::uint16_t>(bf ? 0x7f81 : 0x7c01), 0xffff,
                                     static_cast<std::uint16_t>(bf ? 0x7f80 : 0x7c00),
                                     static_cast<std::uint16_t>(bf ? 0xff80 : 0xfc00)};
  for (std::uint16_t v : finite)
    if (n) x[rng() % n] = v;
  for (int k = 0; k < bad && n > 0; ++k) x[rng() % n] = nonfinite[rng() % 5];
  return x;
}

SlotView view_of(const std::vector<std::uint16_t>& x, ElementType type) {
  SlotView v;
  v.data = x.data();
  v.count = x.size();
  v.type = type;
  return v;
}

class HalfDevice : public ::testing::TestWithParam<HalfCase> {};

TEST_P(HalfDevice, AGraphedCheckGivesTheHostPathsKindsCountsHealthAndCopies) {
  const HalfCase c = GetParam();
  std::mt19937 rng(7);
  // Lengths around the vector loop (8 values a load) and its tail; offsets 0 (aligned) and 1
  // (2-byte aligned only: the unaligned path).
  const std::size_t lengths[] = {1, 7, 8, 9, 63, 1000, 4097, 100003, 1 << 20};
  const int slots = 2 * static_cast<int>(std::size(lengths));
  std::vector<std::vector<std::uint16_t>> host;
  for (std::size_t n : lengths)
    for (int offset = 0; offset < 2; ++offset)
      host.push_back(crafted(c.type, n, offset == 0 ? 3 : 1, rng));
  // At step 0 the aligned slot of each length is clean (its non-finite values replaced by 1.0)
  // and the unaligned one as crafted; at step 1 all are as crafted.
  const std::uint16_t one = c.type == ElementType::BFloat16 ? 0x3f80 : 0x3c00;
  std::vector<std::vector<std::uint16_t>> clean = host;
  const auto nonfinite = [&](std::uint16_t v) {
    return c.type == ElementType::BFloat16 ? half_nonfinite(BFloat16{v})
                                           : half_nonfinite(Float16{v});
  };
  for (std::size_t i = 0; i < clean.size(); i += 2)
    for (auto& v : clean[i])
      if (nonfinite(v)) v = one;

  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::size_t total = 0;
  for (const auto& x : host) total += x.size() + 16;
  DeviceBank bank(BankShape{slots, 4, true, total}, stream);
  std::uint16_t* pool = nullptr;
  ASSERT_EQ(cudaMalloc(&pool, (total + 16) * sizeof(std::uint16_t)), cudaSuccess);
  std::vector<DeviceBank::GroupItem> items;
  std::vector<std::size_t> at;
  std::size_t used = 0;
  for (int s = 0; s < slots; ++s) {
    const auto i = static_cast<std::size_t>(s);
    used = (used + 7) / 8 * 8 + static_cast<std::size_t>(s % 2);  // 16-byte aligned, or +2 bytes
    at.push_back(used);
    items.push_back({s, pool + used, host[i].size(), nullptr, -1, c.type});
    used += host[i].size();
  }
  auto upload = [&](const std::vector<std::vector<std::uint16_t>>& from) {
    for (std::size_t i = 0; i < from.size(); ++i)
      cudaMemcpy(pool + at[i], from[i].data(), from[i].size() * 2, cudaMemcpyHostToDevice);
  };
  // The step's check captured into a graph, then replayed (as an SDK trainer's graphed step).
  upload(clean);
  bank.begin_step(0);
  bank.check_group(items, stream);  // the table made outside the capture first
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  bank.reset_fold();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  bank.check_group(items, stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int step = 0; step < 2; ++step) {
    upload(step == 0 ? clean : host);
    bank.begin_step(step);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<float> rows = bank.read_health_rows();
    const auto& bufs = step == 0 ? clean : host;
    for (int s = 0; s < slots; ++s) {
      const auto i = static_cast<std::size_t>(s);
      SCOPED_TRACE(::testing::Message() << c.name << " slot " << s << " (" << bufs[i].size()
                                        << " values, offset " << s % 2 << ") step " << step);
      HealthRow want = unmeasured_health();
      check_host_buffer(view_of(bufs[i], c.type), true, want);
      const float* got = rows.data() + i * kHealthFieldCount;
      for (int k :
           {kHealthMin, kHealthMax, kHealthNonfinite, kHealthZeroFraction, kHealthUnderflowShare})
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[k]),
                  std::bit_cast<std::uint32_t>(want[static_cast<std::size_t>(k)]))
            << kHealthFieldNames[static_cast<std::size_t>(k)];
      // A sum in double over the largest finite values of both signs (bfloat16's 3.39e38) keeps
      // an error of a few ulps of those values whatever the order: the mean's share of it.
      const double top =
          std::fmax(std::fabs(double(want[kHealthMin])), std::fabs(double(want[kHealthMax])));
      const double n = static_cast<double>(bufs[i].size());
      for (int k : {kHealthMean, kHealthRms, kHealthOverflowMargin, kHealthDynamicRange}) {
        const float w = want[static_cast<std::size_t>(k)];
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(got[k])) << kHealthFieldNames[static_cast<std::size_t>(k)];
          continue;
        }
        // The device's double sums in another order, and its log2: within float rounding.
        const double cancellation = k == kHealthMean && std::isfinite(top) ? n * top * 0x1p-52 : 0;
        EXPECT_NEAR(got[k], w, 4e-6 * std::fabs(w) + cancellation + 1e-30)
            << kHealthFieldNames[static_cast<std::size_t>(k)];
      }
    }
  }
  const auto r = bank.readback();
  for (int s = 0; s < slots; ++s) {
    const auto i = static_cast<std::size_t>(s);
    const ScanResult at0 = scan_view(view_of(clean[i], c.type));
    const ScanResult at1 = scan_view(view_of(host[i], c.type));
    SCOPED_TRACE(::testing::Message() << c.name << " slot " << s);
    EXPECT_EQ(r.kinds(0, s), at0.kinds);
    EXPECT_EQ(r.kinds(1, s), at1.kinds);
    EXPECT_EQ(r.records[i].kinds, at0.kinds | at1.kinds);
    const ScanResult& first = at0.kinds ? at0 : at1;
    EXPECT_EQ(r.records[i].first_step, at0.kinds ? 0 : (at1.kinds ? 1 : -1));
    if (first.kinds) {
      EXPECT_EQ(r.records[i].count, first.count);
    }
    // The first fire's copy: the buffer as the check saw it, widened to float.
    const std::vector<float> copy = bank.captured(s, host[i].size());
    if (!first.kinds) {
      EXPECT_TRUE(copy.empty());
      continue;
    }
    const auto& seen = at0.kinds ? clean[i] : host[i];
    ASSERT_EQ(copy.size(), seen.size());
    for (std::size_t j = 0; j < seen.size(); ++j) {
      const float w = c.type == ElementType::BFloat16 ? static_cast<float>(BFloat16{seen[j]})
                                                      : static_cast<float>(Float16{seen[j]});
      ASSERT_EQ(std::bit_cast<std::uint32_t>(copy[j]), std::bit_cast<std::uint32_t>(w)) << j;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(pool);
  cudaStreamDestroy(stream);
}

// A NaN at every position of a short buffer, at both offsets: found by the vector loop, its tail
// and the unaligned path alike, with its kind told apart from the infinities.
TEST_P(HalfDevice, EveryPositionOfANonFiniteValueIsFoundWithItsKind) {
  const HalfCase c = GetParam();
  const bool bf = c.type == ElementType::BFloat16;
  const std::uint16_t kinds[] = {static_cast<std::uint16_t>(bf ? 0x7fc1 : 0x7e01),
                                 static_cast<std::uint16_t>(bf ? 0x7f80 : 0x7c00),
                                 static_cast<std::uint16_t>(bf ? 0xff80 : 0xfc00)};
  constexpr std::size_t kN = 41;
  const int slots = 2 * 3 * static_cast<int>(kN);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  DeviceBank bank(BankShape{slots, 1, false, 0}, stream);
  std::uint16_t* pool = nullptr;
  const std::size_t stride = 64;  // values per slot: 128 bytes
  ASSERT_EQ(cudaMalloc(&pool, static_cast<std::size_t>(slots) * stride * 2), cudaSuccess);
  std::vector<std::uint16_t> host(static_cast<std::size_t>(slots) * stride, bf ? 0x3f80 : 0x3c00);
  std::vector<DeviceBank::GroupItem> items;
  int s = 0;
  for (int offset = 0; offset < 2; ++offset)
    for (int k = 0; k < 3; ++k)
      for (std::size_t pos = 0; pos < kN; ++pos, ++s) {
        const std::size_t base =
            static_cast<std::size_t>(s) * stride + static_cast<std::size_t>(offset);
        host[base + pos] = kinds[k];
        items.push_back({s, pool + base, kN, nullptr, -1, c.type});
      }
  cudaMemcpy(pool, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  bank.begin_step(0);
  bank.check_group(items, stream);
  const auto r = bank.readback();
  s = 0;
  for (int offset = 0; offset < 2; ++offset)
    for (int k = 0; k < 3; ++k)
      for (std::size_t pos = 0; pos < kN; ++pos, ++s) {
        EXPECT_EQ(r.records[static_cast<std::size_t>(s)].kinds, 1u << k)
            << c.name << " offset " << offset << " position " << pos;
        EXPECT_EQ(r.records[static_cast<std::size_t>(s)].count, 1);
      }
  cudaFree(pool);
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Types, HalfDevice,
                         ::testing::Values(HalfCase{"bfloat16", ElementType::BFloat16},
                                           HalfCase{"float16", ElementType::Float16}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
