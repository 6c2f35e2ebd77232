#include "model/param_layout.h"

namespace nanscope {

ParamLayout::ParamLayout(const Dims& d) {
  enum G { Enc, Bn, Val, Adv, Ens, Iqn, Aux };
  auto add = [&](ParamId id, const char* name, std::vector<int> shape, int group, int fan_in,
                 bool exists = true) {
    ParamEntry e;
    e.id = id;
    e.name = name;
    e.shape = shape;
    e.cols = shape.back();
    e.rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) e.rows *= shape[i];
    e.group = group;
    e.fan_in = fan_in;
    if (exists) {
      e.count = static_cast<std::size_t>(e.rows) * e.cols;
      e.offset = total_;
      total_ += (e.count + 15) / 16 * 16;
    }
    entries_.push_back(e);
  };
  add(kEncW1, "encoder.w1", {d.F, d.H}, Enc, d.F);
  add(kEncB1, "encoder.b1", {d.H}, Enc, 0);
  add(kEncW2, "encoder.w2", {d.H, d.H}, Enc, d.H);
  add(kEncB2, "encoder.b2", {d.H}, Enc, 0);
  add(kBnW, "bottleneck.w", {d.H, d.Z}, Bn, d.H);
  add(kBnB, "bottleneck.b", {d.Z}, Bn, 0);
  add(kValW, "value.w", {d.Z, d.NA}, Val, d.Z);
  add(kValB, "value.b", {d.NA}, Val, 0);
  add(kAdvW, "adv.w", {d.Z, d.A * d.NA}, Adv, d.Z);
  add(kAdvB, "adv.b", {d.A * d.NA}, Adv, 0);
  add(kEnsW, "ens.w", {d.E, d.Z, d.NA}, Ens, d.Z);
  add(kEnsB, "ens.b", {d.E, d.NA}, Ens, 0);
  add(kIqnPhiW, "iqn.phi.w", {d.C, d.H}, Iqn, d.C, d.iqn);
  add(kIqnPhiB, "iqn.phi.b", {d.H}, Iqn, 0, d.iqn);
  add(kIqnOutW, "iqn.out.w", {d.H, d.A}, Iqn, d.H, d.iqn);
  add(kIqnOutB, "iqn.out.b", {d.A}, Iqn, 0, d.iqn);
  add(kAuxW1, "aux.w1", {d.H, d.AH}, Aux, d.H);
  add(kAuxB1, "aux.b1", {d.AH}, Aux, 0);
  add(kAuxW2, "aux.w2", {d.AH, d.AO}, Aux, d.AH);
  add(kAuxB2, "aux.b2", {d.AO}, Aux, 0);
}

std::vector<const ParamEntry*> ParamLayout::existing() const {
  std::vector<const ParamEntry*> out;
  for (const auto& e : entries_)
    if (e.exists()) out.push_back(&e);
  return out;
}

const ParamEntry* ParamLayout::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name && e.exists()) return &e;
  return nullptr;
}

}  // namespace nanscope
