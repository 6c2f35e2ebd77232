// Slot tables. A table is a value: nanscope's own trainer's 37 slots are one constant table
// (SlotTable::builtin()), and a trainer written against the SDK (docs/sdk.md) brings its own, up to
// kMaxSlots. Each session, bank, writer and reader holds the table it works with; nothing reads a
// table of the process. Index i of a table is index i in its HDF5 files, JSON, the CLI and the
// GUI. `rank` is the dataflow rank: the order in which a step finalises each slot's buffer, used to
// name the entry point of a NaN (the fired slot finalised first at the earliest firing step).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/slot_set.h"

namespace nanscope {

// The most slots any table may hold (docs/sdk.md).
inline constexpr int kMaxSlots = 4096;

enum class Phase : int {
  Sample = 0,
  Forward,
  BackwardMain,
  BackwardAux,
  BackwardIqn,
  BackwardEncoder,
  ChecksPostBackward,
  Optimizer,
};
inline constexpr int kPhaseCount = 8;
std::string_view phase_name(Phase p);  // "sample", "forward", "backward.main", ...

enum Slot : int {
  kBatch = 0,
  kHS1,
  kHS2,
  kBnZ,
  kValueLogits,
  kAdvLogits,
  kLogProbs,
  kTargetLogProbs,
  kProjTarget,
  kC51Loss,
  kQExpected,
  kCqlLse,
  kIqnTau,
  kIqnPhi,
  kIqnQuantiles,
  kIqnTargetQuantiles,
  kIqnLoss,
  kAuxPredNb,
  kAuxLoss,
  kEnsembleLogits,
  kTotalLoss,
  kGradNorm,
  kAdamMoments,
  kParams,
  kDValueLogits,
  kDAdvLogits,
  kIqnTrunkM,
  kIqnDHS2,
  kDBranchLogits,
  kCqlDValueLogits,
  kAuxDHS2Nb,
  kEnsembleDLogits,
  kBnDConcat,
  kBwDHS2Main,
  kBwDHS2Aux,
  kBwDHS2Iqn,
  kIqnCosFeatures,
  kBuiltinSlotEnd  // one past the last: nanscope's own trainer's slot count
};
inline constexpr int kBuiltinSlotCount = kBuiltinSlotEnd;

// What a slot's buffer is to the health fields and the watches (SlotInfo::roles, bits).
enum SlotRole : std::uint8_t {
  kRoleC51Rows = 1,     // rows of C51 probabilities: c51_mass_error measures their mass
  kRoleLogProbs = 2,    // ... held as log-probabilities
  kRoleLseInput = 4,    // logits a logsumexp takes: the cql_margin watch
  kRoleReluOutput = 8,  // a relu's output: the dead_relu watch
  kRoleQuantiles = 16,  // IQN quantiles against their taus: quantile_crossing measures their order
};

// Where a slot's buffer lives: its own buffer, or a view of storage the step keeps anyway (a
// backend allocates a buffer for the first kind only).
enum class SlotStorage : std::uint8_t {
  Own,
  AdamMoments,    // Adam's m and v, every parameter
  Params,         // the parameters
  BackwardTrunk,  // bw_d_h_s2, the trunk gradient each backward stage adds into
  Work,           // a work buffer of the step's own (each backend's slot-to-buffer table names it)
};

struct SlotInfo {
  int index = 0;
  std::string name;
  Phase phase = Phase::Forward;       // the phase in which the check runs
  Phase written_in = Phase::Forward;  // the phase whose work writes the buffer (a post-backward
                                      // check reads a buffer the backward wrote earlier)
  std::string call_site;              // where in that phase
  std::string producer;               // the operation that writes the buffer
  std::string buffer;                 // what the buffer holds, with its shape
  bool iqn_only = false;              // absent when loss.lambda_iqn = 0
  // The slots whose buffers the step computes from this one directly (through buffers that are
  // not slots), ascending: where a non-finite value in this buffer travels next, within the same
  // step (docs/trainer.md's dataflow; docs/slots.md lists them).
  std::vector<int> consumers;
  SlotStorage storage = SlotStorage::Own;
  // Checked only once the user asks (sentinel.undefer): the slot starts in the deferred state.
  bool starts_deferred = false;
  std::uint8_t roles = 0;       // SlotRole bits
  std::string phase_text = {};  // a trainer's own phase name (phase_name(phase) when empty)
  int rank = 0;  // dataflow rank (0 = finalised first; the builtin table's row order)
};

// The phase a slot's check runs in, as files and views name it.
std::string_view slot_phase(const SlotInfo& s);

// The element type a slot's buffer holds, as the inspector and the Slots table name it: an SDK
// trainer's slot's from its buffer text (the SDK writes "[32, 16] bfloat16"); nanscope's own
// trainer's buffers are all of the run's precision (`builtin_type`, "float32" or "float64").
class SlotTable;
std::string_view slot_type_name(const SlotTable& table, int slot, std::string_view builtin_type);

// A slot of another trainer's table, as the SDK registers it and its run file records it (/slots).
struct TrainerSlot {
  std::string name, phase, buffer;
  int rank = 0;                // its dataflow order: 0 = finalised first in a step
  std::vector<int> consumers;  // the slots that read this slot's buffer within the step
};

class SlotTable;
using SlotTableRef = std::shared_ptr<const SlotTable>;

class SlotTable {
 public:
  // nanscope's own trainer's 37 slots (the slots with built-in meaning: the backward entry of
  // 33-35, the C51 and IQN health fields, the scenarios).
  static const SlotTableRef& builtin();
  // Another trainer's table, checked first: 1 to kMaxSlots slots, names unique and valid
  // (slot_name_problem), phases and buffers printable, consumers within the table. Null with
  // `*problem` set (naming the slot) when it is refused.
  static SlotTableRef of_trainer(const std::string& trainer, const std::vector<TrainerSlot>& slots,
                                 std::string* problem);

  int size() const { return static_cast<int>(slots_.size()); }
  const SlotInfo& operator[](int index) const { return slots_[static_cast<std::size_t>(index)]; }
  const SlotInfo& at(int index) const { return slots_.at(static_cast<std::size_t>(index)); }
  bool contains(int index) const { return index >= 0 && index < size(); }
  std::vector<SlotInfo>::const_iterator begin() const { return slots_.begin(); }
  std::vector<SlotInfo>::const_iterator end() const { return slots_.end(); }
  // "nanscope", or the trainer's name.
  const std::string& trainer() const { return trainer_; }
  bool is_builtin() const { return builtin_; }

  // By name ("bn_d_concat") or by index as text ("32").
  std::optional<int> find(std::string_view name_or_index) const;
  // The slot and every slot its buffer reaches within the step, following the consumers; a slot
  // absent this run (not in `present`) passes its inputs on to its own consumers (without the IQN
  // head the encoder reads the trunk gradient directly). Only present slots are returned.
  SlotSet downstream_closure(int slot, const SlotSet& present) const;
  // The slots that start deferred, as "31" (or "31, 5"), for messages and docs.
  std::string deferred_text() const;
  // Each slot's index, name, phases, rank, consumers, roles and flags (FNV-1a): two tables agree
  // on it only when they are the same table.
  std::uint64_t fingerprint() const;

 private:
  SlotTable() = default;
  std::string trainer_ = "nanscope";
  bool builtin_ = true;
  std::vector<SlotInfo> slots_;
};

// A slot of nanscope's own trainer (SlotTable::builtin()).
const SlotInfo& builtin_slot(int index);
// The fingerprint of nanscope's own table: the CUDA plugin's handshake compares it
// (backend_choice/cuda_plugin_api.h), so a plugin built with another table is refused.
std::uint64_t builtin_slot_table_fingerprint();

// What is wrong with a trainer's slot name ("" when nothing): 1-127 letters, digits, '_', '.',
// '-', ':' or '#', not starting with '.', '-', ':' or '#' and without "..": a framework's module
// path reads as itself (`grad:blocks.3.mlp.fc1.weight`), and the name is part of its dumps' file
// names (dump_file_name writes ':' and '#' as '_').
std::string slot_name_problem(const std::string& name);
// What is wrong with a trainer's name ("" when nothing): 1-63 printable characters, no ',', not
// "nanscope".
std::string trainer_name_problem(const std::string& name);

// The slot's row of the table in docs/slots.md (a test keeps the document and the table equal).
std::string slot_markdown_row(const SlotInfo& s);

}  // namespace nanscope
