#include "model/memory_estimate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/errors.h"
#include "core/slot_table.h"
#include "data/transitions.h"
#include "model/dims.h"
#include "model/param_layout.h"
#include "model/slot_shapes.h"

namespace nanscope {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kDocumentedHostBound =
    1024.0 * kGiB;  // docs/config.md: at most 1 TiB, whatever the machine
}  // namespace

MemoryEstimate estimate_memory(const Config& c) {
  const Dims d = Dims::from(c);
  const double T = c.model.precision == Precision::Float64 ? 8 : 4;
  // Parameter count without building a layout (that allocates nothing, but stay arithmetic).
  const ParamLayout layout(d);
  const double P = static_cast<double>(layout.total());
  const double B = d.B, H = d.H;
  double slots = 0;  // the slots' own buffers (a view is counted with what it views)
  for (int s = 0; s < kBuiltinSlotCount; ++s)
    if (builtin_slot(s).storage == SlotStorage::Own)
      slots += static_cast<double>(element_count(slot_shape(d, s, layout.total())));
  const double iqn =
      d.iqn ? (4.0 * B * d.N + 3.0 * B * d.Np + 3.0 * B * d.K) * H + B * (d.N + d.Np + d.K) * d.C
            : 0;
  const double trunk =
      24.0 * B * H + 8.0 * B * d.A * d.NA;  // online and target passes on s', heads, gradients
  const double bars = static_cast<double>(c.data.bars);
  MemoryEstimate e;
  e.parts = {
      {"IQN work buffers (cosine features, phi, psi and their gradients, three passes)",
       "model.batch x (model.iqn_n + model.iqn_n_target + model.iqn_k) x model.hidden", T * iqn},
      {"slot buffers", "model.batch x model.hidden, model.batch x model.iqn_n x model.hidden, ...",
       T * slots},
      {"trunk and head work buffers", "model.batch x model.hidden", T * trunk},
      {"parameters, target, gradients, Adam state and the kept state",
       "model.hidden, model.bottleneck, model.atoms, model.ensemble, model.aux_hidden",
       (5 * T + 32) * P},
      {"bars and fold transitions", "data.bars",
       bars * (48.0 + (2.0 * kFeatureCount + 8) * (8 + T))},
  };
  std::sort(e.parts.begin(), e.parts.end(),
            [](const MemoryPart& a, const MemoryPart& b) { return a.bytes > b.bytes; });
  for (const auto& p : e.parts) e.host_bytes += p.bytes;
  // The device holds the slots twice (the first-fire capture areas), the work buffers, the state
  // and its kept copy, and the fold's transitions.
  e.device_bytes = 4 * (2 * slots + iqn + trunk) + 4 * 10 * P + bars * 2.0 * kFeatureCount * 4;
  return e;
}

double host_memory_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double budget = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page)
                                        : kDocumentedHostBound;
  budget = std::min(budget, kDocumentedHostBound);
  if (const char* cap = std::getenv("NANSCOPE_MAX_HOST_GIB")) {
    const double gib = std::atof(cap);
    if (gib > 0) budget = std::min(budget, gib * kGiB);
  }
  return budget;
}

void require_memory(const Config& config, double estimate, double available,
                    const std::string& where) {
  if (estimate <= available) return;
  const MemoryEstimate e = estimate_memory(config);
  std::string parts;
  for (std::size_t i = 0; i < std::min<std::size_t>(2, e.parts.size()); ++i)
    parts += fmt::format("{}{} {:.1f} GiB ({})", i ? "; " : "", e.parts[i].what,
                         e.parts[i].bytes / kGiB, e.parts[i].keys);
  throw ConfigError(fmt::format(
      "config: needs about {:.1f} GiB of {} memory, more than the {:.1f} GiB there is: {}",
      estimate / kGiB, where, available / kGiB, parts));
}

void require_host_memory(const Config& config) {
  require_memory(config, estimate_memory(config).host_bytes, host_memory_budget(), "host");
}

}  // namespace nanscope
