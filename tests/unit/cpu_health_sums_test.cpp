// The CPU backend's health sums (model/cpu_health_sums.h) against HealthSums::add element by
// element: min, max and the counts exactly, the sums to double rounding; and its two forms, SSE2
// (float buffers) and plain C++ (the float64 mode's, fed the same values), bit for bit.
#include <gtest/gtest.h>

#include <cfloat>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "model/cpu_health_sums.h"

using namespace nanscope;

namespace {

// Values a checked buffer can hold: ordinary ones, zeros of both signs, denormals, the largest
// floats, NaN and both infinities.
std::vector<float> hostile_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  std::uniform_int_distribution<int> pick(0, 19);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(n);
  for (float& v : x) switch (pick(rng)) {
      case 0:
        v = std::numeric_limits<float>::quiet_NaN();
        break;
      case 1:
        v = inf;
        break;
      case 2:
        v = -inf;
        break;
      case 3:
        v = 0.f;
        break;
      case 4:
        v = -0.f;
        break;
      case 5:
        v = std::numeric_limits<float>::denorm_min() * 7;
        break;
      case 6:
        v = std::numeric_limits<float>::max();
        break;
      case 7:
        v = -std::numeric_limits<float>::max();
        break;
      default:
        v = u(rng) * std::pow(10.f, u(rng) * 10);
        break;
    }
  return x;
}

HealthSums one_by_one(const std::vector<float>& x) {
  HealthSums h;
  for (float v : x) h.add(v, FLT_MIN);
  return h;
}

// `b` a float64 buffer's sums: its subnormals are float64's (none here), not float32's.
void expect_same_bits(const HealthSums& a, const HealthSums& b, bool b_is_float64 = false) {
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.lo), std::bit_cast<std::uint64_t>(b.lo));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.hi), std::bit_cast<std::uint64_t>(b.hi));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.sum), std::bit_cast<std::uint64_t>(b.sum));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.sumsq), std::bit_cast<std::uint64_t>(b.sumsq));
  EXPECT_EQ(a.finite, b.finite);
  EXPECT_EQ(a.nonfinite, b.nonfinite);
  EXPECT_EQ(a.zeros, b.zeros);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.least_nonzero),
            std::bit_cast<std::uint64_t>(b.least_nonzero));
  EXPECT_EQ(b.subnormal, b_is_float64 ? 0u : a.subnormal);
}

}  // namespace

TEST(CpuHealthSums, AgreeWithTheElementByElementRule) {
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 33u, 1000u, 100003u}) {
    SCOPED_TRACE(n);
    const std::vector<float> x = hostile_values(n, static_cast<std::uint32_t>(n) + 1);
    const HealthSums fast = cpu_health_sums(x.data(), x.size());
    const HealthSums ref = one_by_one(x);
    EXPECT_EQ(fast.finite, ref.finite);
    EXPECT_EQ(fast.nonfinite, ref.nonfinite);
    EXPECT_EQ(fast.zeros, ref.zeros);
    EXPECT_EQ(fast.finite + fast.nonfinite, n);
    EXPECT_EQ(fast.lo, ref.lo);  // as numbers: the sign of a zero may differ with the order
    EXPECT_EQ(fast.hi, ref.hi);
    // The same terms added in another order: apart by at most n roundings of the largest partial
    // sum, which the sum of the terms' magnitudes bounds.
    double magnitude = 0;
    for (float v : x)
      if (std::isfinite(v)) magnitude += std::abs(static_cast<double>(v));
    const double rounding = static_cast<double>(n) * std::numeric_limits<double>::epsilon();
    EXPECT_NEAR(fast.sum, ref.sum, rounding * magnitude);
    EXPECT_NEAR(fast.sumsq, ref.sumsq, rounding * ref.sumsq);
  }
}

// A float64 buffer past float32's range: its margin is to float64's largest value and its
// dynamic range its own, never an infinity of float32's (the float64 reference).
TEST(CpuHealthSums, AFloat64BuffersMarginAndRangeAreFloat64s) {
  const std::vector<double> x = {1e39, 1.0, -2.0, 1e-300, 0.0};
  const HealthSums h = cpu_health_sums(x.data(), x.size());
  HealthRow row = unmeasured_health();
  h.write(row.data(), type_limits(ElementType::Float64));
  EXPECT_EQ(row[kHealthOverflowMargin],
            static_cast<float>(std::log2(std::numeric_limits<double>::max()) - std::log2(1e39)));
  EXPECT_EQ(row[kHealthDynamicRange], static_cast<float>(std::log2(1e39) - std::log2(1e-300)));
  EXPECT_EQ(row[kHealthUnderflowShare], 0.f);  // 1e-300 is a normal float64
  EXPECT_TRUE(std::isinf(row[kHealthMax]));    // the row's max is float32: 1e39 past it
  EXPECT_EQ(row[kHealthNonfinite], 0.f);
}

TEST(CpuHealthSums, EveryBuildGivesTheSameBits) {
  for (std::size_t n : {0u, 5u, 8u, 24u, 31u, 4096u, 65537u}) {
    SCOPED_TRACE(n);
    const std::vector<float> x = hostile_values(n, 7 * static_cast<std::uint32_t>(n) + 3);
    const std::vector<double> as_double(x.begin(), x.end());  // exact: the plain form's input
    expect_same_bits(cpu_health_sums(x.data(), x.size()),
                     cpu_health_sums(as_double.data(), as_double.size()), true);
    expect_same_bits(cpu_health_sums(x.data(), x.size()), cpu_health_sums(x.data(), x.size()));
  }
}

TEST(CpuHealthSums, AFiniteBufferHasNoNonFiniteCount) {
  std::vector<float> x(1001, 0.5f);
  x[1000] = -2.f;
  const HealthSums h = cpu_health_sums(x.data(), x.size());
  EXPECT_EQ(h.nonfinite, 0u);
  EXPECT_EQ(h.finite, 1001u);
  EXPECT_EQ(h.lo, -2.f);
  EXPECT_EQ(h.hi, 0.5f);
  EXPECT_EQ(h.sum, 498.0);
  x[999] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(cpu_health_sums(x.data(), x.size()).nonfinite, 1u);
}
