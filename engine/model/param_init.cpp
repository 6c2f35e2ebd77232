#include "model/param_init.h"

#include <algorithm>
#include <cmath>

#include "data/philox.h"

namespace nanscope {

std::vector<double> initial_parameters(const Config& config, const ParamLayout& layout) {
  std::vector<double> p(layout.total(), 0.0);
  for (const ParamEntry* e : layout.existing()) {
    if (e->fan_in == 0) continue;  // biases start at zero
    CounterRng rng(config.run.seed, DrawStream::Init, static_cast<std::uint32_t>(e->id));
    const double k = 1.0 / std::sqrt(static_cast<double>(e->fan_in));
    const double scale = e->id == kIqnOutW ? config.init.iqn_out_scale : 1.0;
    for (std::size_t i = 0; i < e->count; ++i)
      p[e->offset + i] = (2.0 * rng.uniform() - 1.0) * k * scale;
  }
  for (ParamId id : {kEncB1, kEncB2}) {
    const ParamEntry& e = layout[id];
    std::fill_n(p.begin() + static_cast<std::ptrdiff_t>(e.offset), e.count,
                config.init.encoder_bias);
  }
  return p;
}

}  // namespace nanscope
