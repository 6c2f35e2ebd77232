#include "model/host_check.h"

#include "model/cpu_health_sums.h"

namespace nanscope {

HostCheckResult check_host_buffer(const SlotView& v, bool health, HealthRow& row) {
  HostCheckResult r;
  if (health) {
    const HealthSums h =
        with_elements(v, [&v](const auto* x) { return cpu_health_sums(x, v.count); });
    h.write(row.data(), type_limits(v.type));
    r.nonfinite = h.nonfinite;
  }
  if (!(health && !v.is_f64() && r.nonfinite == 0)) r.scan = scan_view(v);
  return r;
}

CapturedSlot capture_host_buffer(int slot, const SlotView& v, const ScanResult& scan,
                                 bool keep_float64) {
  CapturedSlot c;
  c.slot = slot;
  c.shape = v.shape;
  c.scan = scan;
  if (keep_float64 && v.is_f64()) {
    const auto* x = static_cast<const double*>(v.data);
    c.values64.assign(x, x + v.count);
    return c;
  }
  c.values.resize(v.count);
  for (std::size_t i = 0; i < v.count; ++i) c.values[i] = static_cast<float>(v.at(i));
  return c;
}

}  // namespace nanscope
