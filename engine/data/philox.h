// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011). A draw is a pure function of
// (seed, stream, a, b, index), so any step's batch and tau samples can be re-drawn exactly later,
// on either backend, without replaying a generator's history. The same function is used by the
// CUDA kernels, which is why it is header-only, branch-free and uses only 32-bit integer maths.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace nanscope {

// Independent streams of draws; the value is part of the counter.
enum class DrawStream : std::uint32_t {
  BatchIndex = 1,
  Tau = 2,         // IQN tau, online on s   [B, N]
  TauTarget = 3,   // IQN tau', target on s' [B, N']
  TauGreedy = 4,   // IQN tau_K, online on s' for the greedy action [B, K]
  Init = 16,       // parameter initialisation (a = parameter index)
  Synthetic = 32,  // synthetic bar generator
  Behaviour = 33,  // behaviour policy
};

// Host and device: the CUDA sampler compiles these same functions (cuda/batch_sampler.cu).
#if defined(__CUDACC__)
#define NANSCOPE_HD __host__ __device__
#else
#define NANSCOPE_HD
#endif

// Philox4x32-10 in place on plain arrays (usable in device code).
NANSCOPE_HD inline void philox4x32_raw(std::uint32_t ctr[4], std::uint32_t key0,
                                       std::uint32_t key1) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr std::uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(M0) * ctr[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(M1) * ctr[2];
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32),
                        lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32),
                        lo1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = hi1 ^ c1 ^ key0;
    ctr[1] = lo1;
    ctr[2] = hi0 ^ c3 ^ key1;
    ctr[3] = lo0;
    key0 += W0;
    key1 += W1;
  }
}

inline std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> ctr,
                                               std::array<std::uint32_t, 2> key) {
  philox4x32_raw(ctr.data(), key[0], key[1]);
  return ctr;
}

// The i-th 32-bit draw of stream (seed, stream, a, b).
NANSCOPE_HD inline std::uint32_t draw_u32(std::uint64_t seed, DrawStream stream, std::uint32_t a,
                                          std::uint32_t b, std::uint64_t i) {
  // The counter packs (index block, stream, a, b); the key is the seed.
  std::uint32_t ctr[4] = {
      static_cast<std::uint32_t>(i >> 2),
      static_cast<std::uint32_t>(stream) | (static_cast<std::uint32_t>(i >> 34) << 8), a, b};
  philox4x32_raw(ctr, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  return ctr[i & 3u];
}

// Uniform in the open interval (0, 1) as (2k + 1) / 2^24 with k < 2^23: 24 significant bits, so
// exactly representable in float32 and float and double backends see the same tau.
NANSCOPE_HD inline double u32_to_open01(std::uint32_t u) {
  return static_cast<double>(2u * (u >> 9) + 1u) * (1.0 / 16777216.0);
}

// Uniform integer in [0, n) by multiply-shift (no modulo bias worth noticing for n << 2^32).
NANSCOPE_HD inline std::uint32_t u32_to_index(std::uint32_t u, std::uint32_t n) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(u) * n) >> 32);
}

// A sequential reader over one stream, for host-side generators (bars, behaviour, init).
class CounterRng {
 public:
  CounterRng(std::uint64_t seed, DrawStream stream, std::uint32_t a = 0, std::uint32_t b = 0)
      : seed_(seed), stream_(stream), a_(a), b_(b) {}
  std::uint32_t next_u32() { return draw_u32(seed_, stream_, a_, b_, index_++); }
  double uniform() { return u32_to_open01(next_u32()); }
  // Box-Muller; uses two uniforms per normal (the second is discarded to keep draws countable).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Student-t with nu degrees of freedom: normal / sqrt(chi2_nu / nu), chi2 from a gamma draw.
  double student_t(double nu) { return normal() / std::sqrt(gamma(nu / 2.0) * 2.0 / nu); }
  // Gamma(shape, 1) by Marsaglia-Tsang (shape >= 1; boosted below 1).
  double gamma(double shape) {
    if (shape < 1.0) return gamma(shape + 1.0) * std::pow(uniform(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = normal(), v = 1.0 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  std::uint64_t seed_;
  DrawStream stream_;
  std::uint32_t a_, b_;
  std::uint64_t index_ = 0;
};

}  // namespace nanscope
