#include "model/cpu_health_sums.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace nanscope {

namespace {

constexpr std::size_t kLanes = 8;       // of the sums: element i on lane i % 8
constexpr std::size_t kRangeLanes = 4;  // of min and max (one SSE2 register): i % 4

// The lanes' state: what HealthSums holds, per lane. (Min and max only differ by order in the
// sign of a zero, but that too is the same in every build.)
struct Lanes {
  std::array<double, kLanes> sum{}, sumsq{};
  std::array<float, kRangeLanes> lo{INFINITY, INFINITY, INFINITY, INFINITY},
      hi{-INFINITY, -INFINITY, -INFINITY, -INFINITY},
      least{INFINITY, INFINITY, INFINITY, INFINITY};  // the smallest non-zero |value|
  std::uint64_t finite = 0, zeros = 0, subnormal = 0;
};

// The smallest normal of the type a buffer of T holds (the underflow share's threshold).
template <class T>
float smallest_normal_of() {
  if constexpr (std::is_same_v<T, Float16>)
    return static_cast<float>(type_limits(ElementType::Float16).smallest_normal);
  return FLT_MIN;  // float32's and bfloat16's
}

// The whole groups of eight, in plain C++: the reference form of the loop below.
template <class T>
void add_groups_plain(const T* x, std::size_t groups, Lanes& l) {
  const float smallest_normal = smallest_normal_of<T>();
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t k = 0; k < kLanes; ++k) {
      const float v = static_cast<float>(x[g * kLanes + k]);
      if (!std::isfinite(v)) continue;
      float& lo = l.lo[k % kRangeLanes];
      float& hi = l.hi[k % kRangeLanes];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
      const double d = v;
      l.sum[k] += d;
      l.sumsq[k] += d * d;
      ++l.finite;
      l.zeros += v == 0.f;
      const float a = std::fabs(v);
      if (a != 0.f) {
        float& least = l.least[k % kRangeLanes];
        least = a < least ? a : least;
        l.subnormal += a < smallest_normal;
      }
    }
}

#if defined(__SSE2__)
// The same groups with SSE2: two float vectors a group, four double vectors of sums. A non-finite
// value adds +0.0 to its lane's sums where the plain form skips it: the same bits, since a lane's
// sum is never -0.0 (it starts at +0.0, and round-to-nearest makes an exact cancellation +0.0).
void add_groups_sse2(const float* x, std::size_t groups, Lanes& l) {
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  const __m128 largest = _mm_set1_ps(FLT_MAX);
  const __m128 zero = _mm_setzero_ps();
  const __m128 smallest_normal = _mm_set1_ps(FLT_MIN);
  __m128 lo = _mm_loadu_ps(l.lo.data()), hi = _mm_loadu_ps(l.hi.data());
  __m128 least = _mm_loadu_ps(l.least.data());
  // 32-bit counts per lane
  __m128i finite = _mm_setzero_si128(), zeros = _mm_setzero_si128(), subnormal = zeros;
  __m128d s0 = _mm_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;  // lanes 0-1, 2-3, 4-5, 6-7
  __m128d q0 = s0, q1 = s0, q2 = s0, q3 = s0;
  std::uint64_t finite_total = 0, zeros_total = 0, subnormal_total = 0;
  // The 32-bit counts are emptied into 64-bit totals before they could overflow.
  constexpr std::size_t kFlushEvery = std::size_t{1} << 28;
  auto flush = [&] {
    alignas(16) std::array<std::uint32_t, 4> f, z, u;
    _mm_store_si128(reinterpret_cast<__m128i*>(f.data()), finite);
    _mm_store_si128(reinterpret_cast<__m128i*>(z.data()), zeros);
    _mm_store_si128(reinterpret_cast<__m128i*>(u.data()), subnormal);
    for (int i = 0; i < 4; ++i) {
      finite_total += f[static_cast<std::size_t>(i)];
      zeros_total += z[static_cast<std::size_t>(i)];
      subnormal_total += u[static_cast<std::size_t>(i)];
    }
    finite = zeros = subnormal = _mm_setzero_si128();
  };
  // Four floats of a group: their lanes' min, max, counts and double sums (two lanes a register).
  auto add_four = [&](__m128 v, __m128d& s_low, __m128d& s_high, __m128d& q_low, __m128d& q_high) {
    const __m128 a = _mm_and_ps(v, abs_mask);
    const __m128 m = _mm_cmple_ps(a, largest);  // finite (NaN: false)
    lo = _mm_or_ps(_mm_and_ps(m, _mm_min_ps(v, lo)), _mm_andnot_ps(m, lo));
    hi = _mm_or_ps(_mm_and_ps(m, _mm_max_ps(v, hi)), _mm_andnot_ps(m, hi));
    finite = _mm_sub_epi32(finite, _mm_castps_si128(m));
    zeros = _mm_sub_epi32(zeros, _mm_castps_si128(_mm_and_ps(m, _mm_cmpeq_ps(v, zero))));
    const __m128 nz = _mm_and_ps(m, _mm_cmpneq_ps(a, zero));  // finite and non-zero
    least = _mm_or_ps(_mm_and_ps(nz, _mm_min_ps(a, least)), _mm_andnot_ps(nz, least));
    subnormal = _mm_sub_epi32(subnormal,
                              _mm_castps_si128(_mm_and_ps(nz, _mm_cmplt_ps(a, smallest_normal))));
    const __m128 f = _mm_and_ps(m, v);  // the finite values, 0 elsewhere
    const __m128d low = _mm_cvtps_pd(f), high = _mm_cvtps_pd(_mm_movehl_ps(f, f));
    s_low = _mm_add_pd(s_low, low);
    s_high = _mm_add_pd(s_high, high);
    q_low = _mm_add_pd(q_low, _mm_mul_pd(low, low));
    q_high = _mm_add_pd(q_high, _mm_mul_pd(high, high));
  };
  for (std::size_t g = 0; g < groups; ++g) {
    add_four(_mm_loadu_ps(x + g * kLanes), s0, s1, q0, q1);
    add_four(_mm_loadu_ps(x + g * kLanes + 4), s2, s3, q2, q3);
    if ((g + 1) % kFlushEvery == 0) flush();
  }
  flush();
  alignas(16) std::array<double, kLanes> s, q;
  _mm_store_pd(s.data(), s0);
  _mm_store_pd(s.data() + 2, s1);
  _mm_store_pd(s.data() + 4, s2);
  _mm_store_pd(s.data() + 6, s3);
  _mm_store_pd(q.data(), q0);
  _mm_store_pd(q.data() + 2, q1);
  _mm_store_pd(q.data() + 4, q2);
  _mm_store_pd(q.data() + 6, q3);
  for (std::size_t k = 0; k < kLanes; ++k) {
    l.sum[k] += s[k];
    l.sumsq[k] += q[k];
  }
  _mm_storeu_ps(l.lo.data(), lo);
  _mm_storeu_ps(l.hi.data(), hi);
  _mm_storeu_ps(l.least.data(), least);
  l.finite += finite_total;
  l.zeros += zeros_total;
  l.subnormal += subnormal_total;
}
#endif

template <class T>
HealthSums finish(const T* x, std::size_t n, const Lanes& l) {
  const std::size_t whole = n - n % kLanes;
  HealthSums h;
  for (std::size_t k = 0; k < kRangeLanes; ++k) {  // float lanes into double, exactly
    const double lo = l.lo[k], hi = l.hi[k], least = l.least[k];
    h.lo = lo < h.lo ? lo : h.lo;
    h.hi = hi > h.hi ? hi : h.hi;
    h.least_nonzero = least < h.least_nonzero ? least : h.least_nonzero;
  }
  for (std::size_t k = 0; k < kLanes; ++k) {
    h.sum += l.sum[k];
    h.sumsq += l.sumsq[k];
  }
  h.finite = l.finite;
  h.zeros = l.zeros;
  h.subnormal = l.subnormal;
  h.nonfinite = whole - l.finite;
  for (std::size_t i = whole; i < n; ++i) h.add(static_cast<float>(x[i]), smallest_normal_of<T>());
  return h;
}

}  // namespace

HealthSums cpu_health_sums(const float* x, std::size_t n) {
  Lanes l;
#if defined(__SSE2__)
  add_groups_sse2(x, n / kLanes, l);
#else
  add_groups_plain(x, n / kLanes, l);
#endif
  return finish(x, n, l);
}

HealthSums cpu_health_sums(const BFloat16* x, std::size_t n) {
  Lanes l;
  add_groups_plain(x, n / kLanes, l);
  return finish(x, n, l);
}

HealthSums cpu_health_sums(const Float16* x, std::size_t n) {
  Lanes l;
  add_groups_plain(x, n / kLanes, l);
  return finish(x, n, l);
}

HealthSums cpu_health_sums(const double* x, std::size_t n) {
  // The float path's eight lanes of sums (element i on lane i % 8, merged in lane order).
  std::array<double, kLanes> sum{}, sumsq{};
  double lo = INFINITY, hi = -INFINITY, least = INFINITY;
  std::uint64_t finite = 0, zeros = 0, subnormal = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    if (!std::isfinite(v)) continue;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum[i % kLanes] += v;
    sumsq[i % kLanes] += v * v;
    ++finite;
    zeros += v == 0.0;
    const double a = std::fabs(v);
    if (a != 0.0) {
      least = a < least ? a : least;
      subnormal += a < DBL_MIN;
    }
  }
  HealthSums h;
  h.lo = lo;
  h.hi = hi;
  for (std::size_t k = 0; k < kLanes; ++k) {
    h.sum += sum[k];
    h.sumsq += sumsq[k];
  }
  h.least_nonzero = least;
  h.finite = finite;
  h.nonfinite = n - finite;
  h.zeros = zeros;
  h.subnormal = subnormal;
  return h;
}

}  // namespace nanscope
