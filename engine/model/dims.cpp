#include "model/dims.h"

#include <cmath>

namespace nanscope {

Dims Dims::from(const Config& c) {
  Dims d;
  d.B = c.model.batch;
  d.F = kFeatureCount;
  d.H = c.model.hidden;
  d.Z = c.model.bottleneck;
  d.NA = c.model.atoms;
  d.N = c.model.iqn_n;
  d.Np = c.model.iqn_n_target;
  d.K = c.model.iqn_k;
  d.C = c.model.iqn_cos;
  d.E = c.model.ensemble;
  d.AH = c.model.aux_hidden;
  d.iqn = c.iqn_enabled();
  d.v_min = c.model.v_min;
  d.v_max = c.model.v_max;
  d.dz = (d.v_max - d.v_min) / (d.NA - 1);
  d.gamma_n = std::pow(c.model.gamma, c.data.n_step);
  d.kappa = c.model.kappa;
  return d;
}

}  // namespace nanscope
