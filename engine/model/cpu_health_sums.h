// A checked buffer's health sums on the CPU backend (HealthSums, core/slot_health.h, is the rule
// and the CUDA checks' per-thread form). Summing element after element made one chain of dependent
// double additions, 8.7% of the CPU step; these keep eight independent lanes of sums (element i on
// lane i % 8, merged in lane order, then the tail in order), SSE2 where the machine has it, and the
// same eight lanes in plain C++ elsewhere, so every build gives the same bits for the same buffer.
// Min, max and the counts do not depend on the order at all.
#pragma once

#include <cstddef>

#include "core/half_float.h"
#include "core/slot_health.h"

namespace nanscope {

HealthSums cpu_health_sums(const float* x, std::size_t n);
// A float64 buffer measured in float64: a value is non-finite only when it is so in float64, and
// the sums, the range, the margin to float64's limits and the dynamic range take it unrounded (the
// row's min and max are rounded once, into float32, so a magnitude past float32's range reads as
// an infinity there, never as a non-finite count).
HealthSums cpu_health_sums(const double* x, std::size_t n);
// 16-bit buffers, each value widened to float in a register (exactly): the sums a float32 buffer
// of the same values gives, bit for bit, in the plain form of its lanes.
HealthSums cpu_health_sums(const BFloat16* x, std::size_t n);
HealthSums cpu_health_sums(const Float16* x, std::size_t n);

}  // namespace nanscope
