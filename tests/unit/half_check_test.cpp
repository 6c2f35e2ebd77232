// The host path's bfloat16 and float16 checks (core/half_float.h, the scan, the census and the
// health sums in their own type) against a float64 reference decoded from the bits with ldexp:
// every one of the 65,536 values of each type, and crafted buffers (NaNs with payloads, both
// infinities, the largest finite values, subnormals, zeros of both signs) whose flags, counts and
// health must equal, bit for bit, those of a float32 buffer of the same values.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half_float.h"
#include "core/sentinel.h"
#include "model/host_check.h"

using namespace nanscope;

namespace {

struct Format {
  const char* name;
  int exponent_bits, mantissa_bits;
  ElementType type;
};
constexpr Format kBFloat16{"bfloat16", 8, 7, ElementType::BFloat16};
constexpr Format kFloat16{"float16", 5, 10, ElementType::Float16};

// The value of a 16-bit pattern in float64, from the format's definition.
double reference_value(std::uint16_t bits, const Format& f) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int top = (1 << f.exponent_bits) - 1;
  const int exponent = (bits >> f.mantissa_bits) & top;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  double magnitude;
  if (exponent == top)
    magnitude = mantissa ? std::nan("") : INFINITY;
  else if (exponent == 0)
    magnitude = std::ldexp(mantissa, 1 - bias - f.mantissa_bits);
  else
    magnitude = std::ldexp(mantissa + (1 << f.mantissa_bits), exponent - bias - f.mantissa_bits);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

std::uint8_t reference_kind(double v) {
  if (std::isfinite(v)) return 0;
  return std::isnan(v) ? kKindNaN : (v > 0 ? kKindPosInf : kKindNegInf);
}

float widen(std::uint16_t bits, const Format& f) {
  return f.type == ElementType::BFloat16 ? static_cast<float>(BFloat16{bits})
                                         : static_cast<float>(Float16{bits});
}

ScanResult scan(const std::vector<std::uint16_t>& bits, const Format& f) {
  SlotView v;
  v.data = bits.data();
  v.count = bits.size();
  v.type = f.type;
  return scan_view(v);
}

class HalfCheck : public ::testing::TestWithParam<Format> {};

TEST_P(HalfCheck, EveryValueWidensToFloatExactlyPayloadAndSignIncluded) {
  const Format f = GetParam();
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double want = reference_value(bits, f);
    const float got = widen(bits, f);
    ASSERT_EQ(std::signbit(got), std::signbit(want)) << f.name << " 0x" << std::hex << b;
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << f.name << " 0x" << std::hex << b;
      // The payload: the pattern's mantissa at the top of float32's.
      const std::uint32_t payload = std::bit_cast<std::uint32_t>(got) & 0x7fffff;
      ASSERT_EQ(payload >> (23 - f.mantissa_bits),
                static_cast<std::uint32_t>(bits & ((1 << f.mantissa_bits) - 1)))
          << f.name << " 0x" << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << f.name << " 0x" << std::hex << b;
    }
  }
}

TEST_P(HalfCheck, TheScanAndCensusOfEveryValueAreTheReferences) {
  const Format f = GetParam();
  std::vector<std::uint16_t> bits(0x10000);
  for (std::uint32_t b = 0; b <= 0xffff; ++b) bits[b] = static_cast<std::uint16_t>(b);
  std::int64_t nan = 0, posinf = 0, neginf = 0, finite = 0, first_bad = -1;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const double v = reference_value(bits[i], f);
    const std::uint8_t k = reference_kind(v);
    if (k == 0) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      ++finite;
      continue;
    }
    if (first_bad < 0) first_bad = static_cast<std::int64_t>(i);
    (k == kKindNaN ? nan : (k == kKindPosInf ? posinf : neginf)) += 1;
  }
  // 2 (2^m - 1) NaNs and two infinities, by the format's definition.
  EXPECT_EQ(nan, 2 * ((1 << f.mantissa_bits) - 1));
  EXPECT_EQ(posinf, 1);
  EXPECT_EQ(neginf, 1);

  const ScanResult r = scan(bits, f);
  EXPECT_EQ(r.kinds, kKindNaN | kKindPosInf | kKindNegInf);
  EXPECT_EQ(r.count, nan + posinf + neginf);
  EXPECT_EQ(r.first_bad_index, first_bad);

  const Census c = f.type == ElementType::BFloat16
                       ? census(reinterpret_cast<const BFloat16*>(bits.data()), bits.size(), 4)
                       : census(reinterpret_cast<const Float16*>(bits.data()), bits.size(), 4);
  EXPECT_EQ(c.nan, nan);
  EXPECT_EQ(c.posinf, posinf);
  EXPECT_EQ(c.neginf, neginf);
  EXPECT_EQ(c.finite, finite);
  EXPECT_EQ(c.finite_min, lo);
  EXPECT_EQ(c.finite_max, hi);
  EXPECT_EQ(c.finite_sum, sum);  // the same values added in the same order
  ASSERT_EQ(c.first_bad.size(), 4u);
  EXPECT_EQ(c.first_bad[0], first_bad);
}

// A buffer of crafted values, long enough for the health's eight lanes and a tail.
std::vector<std::uint16_t> crafted(const Format& f, bool with_nonfinite) {
  const bool bf = f.type == ElementType::BFloat16;
  std::vector<std::uint16_t> finite = {
      0x0000,
      0x8000,  // +0, -0
      0x0001,
      0x8001,                                            // the smallest subnormals
      static_cast<std::uint16_t>(bf ? 0x007f : 0x03ff),  // the largest subnormal
      static_cast<std::uint16_t>(bf ? 0x0080 : 0x0400),  // the smallest normal
      static_cast<std::uint16_t>(bf ? 0x7f7f : 0x7bff),  // the largest finite value
      static_cast<std::uint16_t>(bf ? 0xff7f : 0xfbff),  // and its negative
      static_cast<std::uint16_t>(bf ? 0x3f80 : 0x3c00),  // 1
      static_cast<std::uint16_t>(bf ? 0xc040 : 0xc200),  // -3
      static_cast<std::uint16_t>(bf ? 0x3eab : 0x3555),  // about 1/3
  };
  const std::vector<std::uint16_t> nonfinite = {
      static_cast<std::uint16_t>(bf ? 0x7fc0 : 0x7e00),  // quiet NaN
      static_cast<std::uint16_t>(bf ? 0x7f81 : 0x7c01),  // a NaN with a payload of 1
      static_cast<std::uint16_t>(bf ? 0xffff : 0xffff),  // a negative NaN, every payload bit
      static_cast<std::uint16_t>(bf ? 0x7f80 : 0x7c00),  // +Inf
      static_cast<std::uint16_t>(bf ? 0xff80 : 0xfc00),  // -Inf
  };
  std::vector<std::uint16_t> out;
  for (int copy = 0; copy < 3; ++copy) {
    out.insert(out.end(), finite.begin(), finite.end());
    if (with_nonfinite) out.push_back(nonfinite[static_cast<std::size_t>(copy)]);
  }
  if (with_nonfinite) out.insert(out.end(), nonfinite.begin() + 3, nonfinite.end());
  return out;
}

TEST_P(HalfCheck, CraftedBuffersGiveTheFloat32PathsFlagsCountsAndHealthBitForBit) {
  const Format f = GetParam();
  for (const bool with_nonfinite : {false, true}) {
    const std::vector<std::uint16_t> bits = crafted(f, with_nonfinite);
    std::vector<float> widened(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) widened[i] = widen(bits[i], f);
    SlotView half, single;
    half.data = bits.data();
    half.count = bits.size();
    half.type = f.type;
    single.data = widened.data();
    single.count = widened.size();
    for (const bool health : {false, true}) {
      HealthRow h_row = unmeasured_health(), s_row = unmeasured_health();
      const HostCheckResult h = check_host_buffer(half, health, h_row);
      const HostCheckResult s = check_host_buffer(single, health, s_row);
      SCOPED_TRACE(::testing::Message() << f.name << (with_nonfinite ? " with" : " without")
                                        << " non-finite values, health " << health);
      EXPECT_EQ(h.scan.kinds, s.scan.kinds);
      EXPECT_EQ(h.scan.count, s.scan.count);
      EXPECT_EQ(h.scan.first_bad_index, s.scan.first_bad_index);
      EXPECT_EQ(h.nonfinite, s.nonfinite);
      // Every field that does not depend on the type's limits, bit for bit; the margin and the
      // underflow share are the 16-bit type's own (below, against the reference).
      for (int k = 0; k < kHealthFieldCount; ++k) {
        if (k == kHealthOverflowMargin || k == kHealthUnderflowShare) continue;
        EXPECT_EQ(std::bit_cast<std::uint32_t>(h_row[static_cast<std::size_t>(k)]),
                  std::bit_cast<std::uint32_t>(s_row[static_cast<std::size_t>(k)]))
            << kHealthFieldNames[static_cast<std::size_t>(k)];
      }
      // The scan in the buffer's own type finds the five crafted non-finite values.
      EXPECT_EQ(scan_view(half).count, with_nonfinite ? 5 : 0);
      if (!health) continue;
      // Against the float64 reference of the values: the range and the counts exactly, the
      // moments to their rounding (a sum in double over the largest finite values of both signs
      // keeps an error of a few ulps of those values, whatever the order; then float's).
      double lo = INFINITY, hi = -INFINITY, sum = 0, sumsq = 0;
      std::int64_t finite = 0, zeros = 0, subnormal = 0;
      double least = INFINITY;
      // The type's limits from its definition: (2 - 2^-m) 2^bias, and 2^(1 - bias).
      const int bias = (1 << (f.exponent_bits - 1)) - 1;
      const double largest = std::ldexp(2 - std::ldexp(1, -f.mantissa_bits), bias);
      const double smallest_normal = std::ldexp(1, 1 - bias);
      for (std::uint16_t b : bits) {
        const double v = reference_value(b, f);
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
        sumsq += v * v;
        ++finite;
        zeros += v == 0;
        if (v != 0) {
          least = std::min(least, std::fabs(v));
          subnormal += std::fabs(v) < smallest_normal;
        }
      }
      const double top = std::max(std::fabs(lo), std::fabs(hi));
      EXPECT_EQ(subnormal, 3 * 3);  // each copy: the two smallest subnormals and the largest
      EXPECT_EQ(h_row[kHealthUnderflowShare], static_cast<float>(static_cast<double>(subnormal) /
                                                                 static_cast<double>(bits.size())));
      // The crafted buffers hold the largest finite value: no margin left.
      EXPECT_EQ(h_row[kHealthOverflowMargin],
                static_cast<float>(std::log2(largest) - std::log2(top)));
      EXPECT_EQ(h_row[kHealthOverflowMargin], 0.f);
      // log2 of largest over the smallest subnormal: 2^(bias + 1) over 2^(1 - bias - m), nearly.
      EXPECT_EQ(h_row[kHealthDynamicRange], static_cast<float>(std::log2(top) - std::log2(least)));
      EXPECT_NEAR(h_row[kHealthDynamicRange], 2 * bias + f.mantissa_bits, 1.0);
      EXPECT_EQ(h_row[kHealthMin], static_cast<float>(lo));
      EXPECT_EQ(h_row[kHealthMax], static_cast<float>(hi));
      EXPECT_EQ(h_row[kHealthNonfinite], with_nonfinite ? 5.f : 0.f);
      EXPECT_EQ(h_row[kHealthZeroFraction],
                static_cast<float>(static_cast<double>(zeros) / static_cast<double>(bits.size())));
      const double mean = sum / static_cast<double>(finite);
      const double rms = std::sqrt(sumsq / static_cast<double>(finite));
      const double sum_error =
          static_cast<double>(bits.size()) * std::max(std::fabs(lo), std::fabs(hi)) * 0x1p-52;
      EXPECT_NEAR(h_row[kHealthMean], mean,
                  sum_error / static_cast<double>(finite) + std::fabs(mean) * 0x1p-23);
      EXPECT_NEAR(h_row[kHealthRms], rms, rms * 1e-6);
    }
  }
}

// The margin to overflow as a value grows toward the type's largest finite value: log2(largest /
// |value|), in bits, the same as the float64 reference at every power of two of the type's range.
TEST_P(HalfCheck, TheOverflowMarginIsTheLog2HeadroomToTheTypesLargestValue) {
  const Format f = GetParam();
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const double largest = std::ldexp(2 - std::ldexp(1, -f.mantissa_bits), bias);
  for (int e = -bias + 1; e <= bias; ++e) {
    // 2^e and its negative, and a zero (no effect on the margin).
    const std::uint16_t one = static_cast<std::uint16_t>((e + bias) << f.mantissa_bits);
    const std::vector<std::uint16_t> bits = {0x0000, one, static_cast<std::uint16_t>(one | 0x8000)};
    SlotView v;
    v.data = bits.data();
    v.count = bits.size();
    v.type = f.type;
    HealthRow row = unmeasured_health();
    check_host_buffer(v, true, row);
    EXPECT_EQ(row[kHealthOverflowMargin], static_cast<float>(std::log2(largest) - e)) << e;
    EXPECT_EQ(row[kHealthDynamicRange], 0.f) << e;
    EXPECT_EQ(row[kHealthUnderflowShare], 0.f) << e;
  }
  // All zeros: no magnitude to measure a margin or a range from.
  const std::vector<std::uint16_t> zeros = {0x0000, 0x8000};
  SlotView v;
  v.data = zeros.data();
  v.count = zeros.size();
  v.type = f.type;
  HealthRow row = unmeasured_health();
  check_host_buffer(v, true, row);
  EXPECT_TRUE(std::isnan(row[kHealthOverflowMargin]));
  EXPECT_TRUE(std::isnan(row[kHealthDynamicRange]));
  EXPECT_EQ(row[kHealthUnderflowShare], 0.f);
}

TEST_P(HalfCheck, AFirstFiresCopyHoldsTheValuesWidened) {
  const Format f = GetParam();
  const std::vector<std::uint16_t> bits = crafted(f, true);
  SlotView v;
  v.data = bits.data();
  v.count = bits.size();
  v.type = f.type;
  v.shape = {static_cast<std::int64_t>(bits.size())};
  const CapturedSlot c = capture_host_buffer(3, v, scan_view(v), /*keep_float64=*/true);
  ASSERT_EQ(c.values.size(), bits.size());
  EXPECT_TRUE(c.values64.empty());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const double want = reference_value(bits[i], f);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(c.values[i])) << i;
    else
      EXPECT_EQ(static_cast<double>(c.values[i]), want) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, HalfCheck, ::testing::Values(kBFloat16, kFloat16),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
