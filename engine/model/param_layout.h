// The trainer's parameters as one named table over one flat allocation (online, target, gradients
// and Adam moments all share this layout). Names are those of the spec; IQN parameters exist only
// when the IQN head does. Offsets are aligned to 16 elements and the padding stays zero, so a
// sentinel reading the whole allocation never reads garbage.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/dims.h"

namespace nanscope {

enum ParamId : int {
  kEncW1 = 0,
  kEncB1,
  kEncW2,
  kEncB2,
  kBnW,
  kBnB,
  kValW,
  kValB,
  kAdvW,
  kAdvB,
  kEnsW,
  kEnsB,
  kIqnPhiW,
  kIqnPhiB,
  kIqnOutW,
  kIqnOutB,
  kAuxW1,
  kAuxB1,
  kAuxW2,
  kAuxB2,
  kParamIdCount
};

struct ParamEntry {
  ParamId id;
  std::string name;        // "encoder.w1"
  std::vector<int> shape;  // logical shape, row-major
  int rows = 0, cols = 0;  // as a matrix (leading dims folded into rows)
  int group = 0;           // index into kParamGroups
  int fan_in = 1;          // for initialisation; 0 for biases
  std::size_t offset = 0;  // into the flat allocation
  std::size_t count = 0;   // rows * cols; 0 when the parameter does not exist this run
  bool exists() const { return count > 0; }
};

class ParamLayout {
 public:
  explicit ParamLayout(const Dims& d);
  const ParamEntry& operator[](ParamId id) const { return entries_[id]; }
  // Existing parameters, in layout order.
  std::vector<const ParamEntry*> existing() const;
  const ParamEntry* find(std::string_view name) const;
  std::size_t total() const { return total_; }  // elements including padding

 private:
  std::vector<ParamEntry> entries_;
  std::size_t total_ = 0;
};

}  // namespace nanscope
