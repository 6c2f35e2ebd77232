// The initial parameters of a run, once for both backends: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))
// weights from the run's counter-based RNG (one stream per parameter), zero biases, the config's
// encoder bias and IQN output scale. Padding stays zero.
#pragma once

#include <vector>

#include "core/config.h"
#include "model/param_layout.h"

namespace nanscope {

std::vector<double> initial_parameters(const Config& config, const ParamLayout& layout);

}  // namespace nanscope
