// One check of a buffer in host memory, the host path's one home: its health row when health is
// on, and its scan for the kinds, the count and the first bad index. The CPU backend's bank checks
// its slots with it, and the SDK's host path checks a trainer's registered buffers with it.
#pragma once

#include "core/sentinel.h"
#include "core/slot_health.h"
#include "model/backend.h"
#include "model/check_bank.h"

namespace nanscope {

struct HostCheckResult {
  ScanResult scan;
  std::uint64_t nonfinite = 0;  // the health's count (0 when health is off)
};

// With `health`, `row` receives the buffer's health fields (min, max, mean, rms, non-finite,
// zero fraction; the learner's fields are the caller's). A float32, bfloat16 or float16 buffer
// whose health counts no non-finite value needs no scan (the same values, the same test); a
// float64 buffer's health and scan are both measured in float64.
HostCheckResult check_host_buffer(const SlotView& v, bool health, HealthRow& row);

// A first fire's copy of the buffer as its check saw it: float64 values stored as float32 (the
// built-in trainer's dumps, as the contract stores slot buffers), or in their own type with
// `keep_float64` (an SDK trainer's, whose dump keeps the slot's type); bfloat16 and float16
// values widen to float32 exactly.
CapturedSlot capture_host_buffer(int slot, const SlotView& v, const ScanResult& scan,
                                 bool keep_float64 = false);

}  // namespace nanscope
