#include "model/slot_shapes.h"

#include <stdexcept>
#include <string>

#include "core/slot_table.h"
#include "model/param_layout.h"

namespace nanscope {

std::vector<std::int64_t> slot_shape(const Dims& d, int slot, std::size_t param_total) {
  const std::int64_t B = d.B, H = d.H, NA = d.NA, A = d.A,
                     P = static_cast<std::int64_t>(param_total);
  if (builtin_slot(slot).iqn_only && !d.iqn) return {};
  // Every slot named, no default: a slot added to the table without its shape is a -Wswitch
  // warning here, not a silent [B, H].
  switch (static_cast<Slot>(slot)) {
    case kBatch:
      return {B * (2 * d.F + 2 + d.AO)};
    case kHS1:
    case kHS2:
      return {B, H};
    case kBnZ:
      return {B, d.Z};
    case kValueLogits:
      return {B, NA};
    case kAdvLogits:
    case kLogProbs:
    case kTargetLogProbs:
      return {B, A, NA};
    case kProjTarget:
      return {B, d.D, NA};
    case kC51Loss:
    case kAuxLoss:
    case kIqnLoss:
      return {B};
    case kQExpected:
      return {B, A};
    case kCqlLse:
      return {B, d.D};
    case kIqnTau:
      return {B, d.N};
    case kIqnCosFeatures:
      return {B, d.N, d.C};
    case kIqnPhi:
      return {B, d.N, H};
    case kIqnQuantiles:
    case kDBranchLogits:
      return {B, d.N, A};
    case kIqnTargetQuantiles:
      return {B, d.Np, A};
    case kAuxPredNb:
      return {B, d.AO};
    case kEnsembleLogits:
    case kEnsembleDLogits:
      return {d.E, B, NA};
    case kTotalLoss:
      return {1};
    case kGradNorm:
      return {1 + kGroupCount};
    case kAdamMoments:
      return {2, P};
    case kParams:
      return {P};
    case kDValueLogits:
    case kCqlDValueLogits:
      return {B, NA};
    case kDAdvLogits:
      return {B, A, NA};
    case kBnDConcat:
      return {B, d.Z};
    case kIqnTrunkM:
    case kIqnDHS2:
    case kAuxDHS2Nb:
    case kBwDHS2Main:
    case kBwDHS2Aux:
    case kBwDHS2Iqn:
      return {B, H};
    case kBuiltinSlotEnd:
      break;  // not a slot
  }
  throw std::out_of_range("slot_shape: " + std::to_string(slot) +
                          " is not a slot of nanscope's own");
}

std::size_t element_count(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return 0;
  std::size_t n = 1;
  for (auto s : shape) n *= static_cast<std::size_t>(s);
  return n;
}

}  // namespace nanscope
