// Sizes of the network, derived once from the config.
#pragma once

#include "core/config.h"
#include "data/transitions.h"

namespace nanscope {

struct Dims {
  int B, F, H, Z, NA;    // batch, features, hidden, bottleneck, atoms
  int D = kBranches;     // action branches
  int A = kActionTotal;  // sub-actions over all branches
  int sub[kBranches] = {kSubActions[0], kSubActions[1], kSubActions[2]};
  int off[kBranches] = {0, kSubActions[0], kSubActions[0] + kSubActions[1]};
  int N, Np, K, C;                  // IQN: online samples, target samples, greedy samples, cosines
  int E, AH, AO = kNextBarTargets;  // ensemble heads, aux hidden, aux outputs
  bool iqn;                         // the IQN head exists (loss.lambda_iqn != 0)
  double v_min, v_max, dz;          // C51 support
  double gamma_n;                   // gamma^n of the n-step bootstrap
  double kappa;

  double zeta(int i) const { return v_min + i * dz; }

  static Dims from(const Config& c);
};

}  // namespace nanscope
