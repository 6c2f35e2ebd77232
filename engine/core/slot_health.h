// A checked slot's health at one step (docs/slots.md, "Slot health"): the numbers a watch reads and
// the run file keeps under /steps/health. One home for their definitions, compiled by the host
// compiler for the CPU backend and the session and by nvcc for the CUDA backend's kernels, so both
// backends compute the same quantities the same way (a CUDA reduction differs only in the order of
// its double sums).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "core/element_type.h"
#include "core/host_device.h"
#include "core/slot_table.h"

namespace nanscope {

// isfinite, exp and the NaN on both sides (no fast-math anywhere, so these are honest).
NANSCOPE_HD inline bool finite_value(double v) {
#ifdef __CUDA_ARCH__
  return isfinite(v);
#else
  return std::isfinite(v);
#endif
}
NANSCOPE_HD inline double health_sqrt(double v) {
#ifdef __CUDA_ARCH__
  return sqrt(v);
#else
  return std::sqrt(v);
#endif
}
NANSCOPE_HD inline double health_log2(double v) {
#ifdef __CUDA_ARCH__
  return log2(v);
#else
  return std::log2(v);
#endif
}
NANSCOPE_HD inline float health_nan() {
#ifdef __CUDA_ARCH__
  return __int_as_float(0x7fc00000);
#else
  return std::numeric_limits<float>::quiet_NaN();
#endif
}

// The fields of a health row, in the order of /steps/health's last axis (files written before the
// last three existed hold the first eight; their readers give the others as NaN).
enum HealthField : int {
  kHealthMin = 0,       // the smallest finite value
  kHealthMax,           // the largest finite value
  kHealthMean,          // the mean of the finite values
  kHealthRms,           // the root mean square of the finite values
  kHealthNonfinite,     // how many values are NaN or infinite
  kHealthZeroFraction,  // the fraction of all values that are exactly zero (+0 or -0)
  kHealthMassError,     // C51 rows (slots 6, 7, 8): the largest |row mass - 1| over finite rows
  kHealthCrossing,      // IQN quantiles (slot 14): the fraction of tau-ordered pairs out of order
  // The margin to overflow: log2 of the slot type's largest finite value over the largest finite
  // |value| (bits of headroom; 0 at the limit). NaN when no finite value is non-zero.
  kHealthOverflowMargin,
  // The fraction of all values that are non-zero and below the type's smallest normal (subnormal,
  // precision lost, one step from flushing to zero).
  kHealthUnderflowShare,
  // log2 of the largest finite |value| over the smallest non-zero one (NaN when none is non-zero).
  kHealthDynamicRange,
  kHealthFieldCount
};
inline constexpr int kHealthFieldCountV3 = 8;  // the fields of files written before the last three
inline constexpr std::array<std::string_view, kHealthFieldCount> kHealthFieldNames = {
    "finite_min",      "finite_max",      "mean",           "rms",
    "nonfinite",       "zero_fraction",   "c51_mass_error", "quantile_crossing",
    "overflow_margin", "underflow_share", "dynamic_range"};

// One slot's row; NaN where the slot was not checked, where it has no finite value (min, max,
// mean, rms) or where a field does not apply to it (the last two).
using HealthRow = std::array<float, kHealthFieldCount>;

inline HealthRow unmeasured_health() {
  HealthRow r;
  r.fill(std::numeric_limits<float>::quiet_NaN());
  return r;
}

// Every slot's row at one step, as wide as the run's table.
using SlotHealthRows = std::vector<HealthRow>;
inline SlotHealthRows unmeasured_rows(int slots) {
  return SlotHealthRows(static_cast<std::size_t>(slots), unmeasured_health());
}

// Slot `slot`'s row of a step's rows; unmeasured where the rows hold none (a step kept without
// health holds no rows at all).
inline const HealthRow& health_at(const SlotHealthRows& rows, int slot) {
  static const HealthRow none = unmeasured_health();
  return slot >= 0 && static_cast<std::size_t>(slot) < rows.size()
             ? rows[static_cast<std::size_t>(slot)]
             : none;
}
inline bool measured(const HealthRow& r) {
  return r[kHealthNonfinite] == r[kHealthNonfinite];
}

// The finite absolute maximum (NaN when nothing finite was seen or the slot was not checked).
inline double abs_max(const HealthRow& r) {
  const double lo = r[kHealthMin], hi = r[kHealthMax];
  if (lo != lo || hi != hi) return std::numeric_limits<double>::quiet_NaN();
  return std::fmax(std::fabs(lo), std::fabs(hi));
}

// The running sums a row is made from: a CUDA thread keeps one over its share, blocks combine
// them; the CPU keeps one over the whole buffer. `smallest_normal` is the slot type's
// (type_limits): a value below it counts as underflowing in that type.
struct HealthSums {
  // In double, so that a float64 buffer's range (and its margin to float64's limits) is its own;
  // a float buffer's are its float values, exactly.
  double lo = INFINITY, hi = -INFINITY;
  double least_nonzero = INFINITY;  // the smallest non-zero finite |value|
  double sum = 0, sumsq = 0;
  std::uint64_t finite = 0, nonfinite = 0, zeros = 0, subnormal = 0;

  NANSCOPE_HD void add(float v, float smallest_normal) {
    if (!finite_value(v)) {
      ++nonfinite;
      return;
    }
    const double d = v;
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
    sum += d;
    sumsq += d * d;
    ++finite;
    zeros += v == 0.f;
    const double a = d < 0 ? -d : d;
    if (a != 0) {
      least_nonzero = a < least_nonzero ? a : least_nonzero;
      subnormal += a < smallest_normal;
    }
  }
  NANSCOPE_HD void merge(const HealthSums& o) {
    lo = o.lo < lo ? o.lo : lo;
    hi = o.hi > hi ? o.hi : hi;
    least_nonzero = o.least_nonzero < least_nonzero ? o.least_nonzero : least_nonzero;
    sum += o.sum;
    sumsq += o.sumsq;
    finite += o.finite;
    nonfinite += o.nonfinite;
    zeros += o.zeros;
    subnormal += o.subnormal;
  }
  // The row's fields but the learner's two (NaN here), against the slot type's limits.
  NANSCOPE_HD void write(float* row, const TypeLimits& limits) const {
    const float nan = health_nan();
    const std::uint64_t all = finite + nonfinite;
    row[kHealthMin] = finite ? static_cast<float>(lo) : nan;
    row[kHealthMax] = finite ? static_cast<float>(hi) : nan;
    row[kHealthMean] = finite ? static_cast<float>(sum / static_cast<double>(finite)) : nan;
    const double rms = health_sqrt(sumsq / static_cast<double>(finite ? finite : 1));
    row[kHealthRms] = finite ? static_cast<float>(rms) : nan;
    row[kHealthNonfinite] = static_cast<float>(nonfinite);
    row[kHealthZeroFraction] =
        all ? static_cast<float>(static_cast<double>(zeros) / static_cast<double>(all)) : nan;
    row[kHealthMassError] = nan;
    row[kHealthCrossing] = nan;
    const double top = finite ? (-lo > hi ? -lo : hi) : 0;
    const bool nonzero = top > 0;  // then least_nonzero is finite too
    row[kHealthOverflowMargin] =
        nonzero ? static_cast<float>(health_log2(limits.largest) - health_log2(top)) : nan;
    row[kHealthUnderflowShare] =
        all ? static_cast<float>(static_cast<double>(subnormal) / static_cast<double>(all)) : nan;
    row[kHealthDynamicRange] =
        nonzero ? static_cast<float>(health_log2(top) - health_log2(least_nonzero)) : nan;
  }
};

// A C51 row's probability mass: the sum of exp over log-probabilities (slots 6 and 7), or of the
// probabilities themselves (slot 8's projection), in double, in atom order. |mass - 1| for a
// finite mass; -1 when the row holds a non-finite value (that is a fire, not a watch).
template <class T>
NANSCOPE_HD double c51_mass_error(const T* row, int atoms, bool log_probs) {
  double mass = 0;
  for (int i = 0; i < atoms; ++i) {
    const double v = static_cast<double>(row[i]);
#ifdef __CUDA_ARCH__
    mass += log_probs ? exp(v) : v;
#else
    mass += log_probs ? std::exp(v) : v;
#endif
  }
  if (!finite_value(mass)) return -1.0;
  return mass > 1.0 ? mass - 1.0 : 1.0 - mass;
}

// The IQN quantiles of one (sample, sub-action) against their taus: of the pairs (i, j) with
// tau_i < tau_j, how many have quantile_i > quantile_j (quantile functions are non-decreasing in
// tau, so each is a crossing). Pairs with a non-finite quantile or tau are not counted.
struct CrossingCount {
  std::uint32_t crossed = 0, ordered = 0;
};
template <class T>
NANSCOPE_HD CrossingCount quantile_crossings(const T* quantiles, int stride, const T* taus, int n) {
  CrossingCount c;
  for (int i = 0; i < n; ++i) {
    const T ti = taus[i], qi = quantiles[i * stride];
    if (!finite_value(static_cast<double>(ti)) || !finite_value(static_cast<double>(qi))) continue;
    for (int j = 0; j < n; ++j) {
      const T tj = taus[j], qj = quantiles[j * stride];
      if (!(ti < tj) || !finite_value(static_cast<double>(qj))) continue;
      ++c.ordered;
      c.crossed += qi > qj;
    }
  }
  return c;
}

// The slots whose rows c51_mass_error reads, and whether they hold log-probabilities, are the
// slot table's (SlotInfo::roles: kRoleC51Rows, kRoleLogProbs).

// Where logsumexp overflows in float: the watch cql_margin measures the largest Q's headroom below
// it in decades (log10(FLT_MAX) - log10(max |Q|)).
inline double overflow_headroom_decades(double abs_max_q) {
  return std::log10(static_cast<double>(std::numeric_limits<float>::max())) - std::log10(abs_max_q);
}

}  // namespace nanscope
