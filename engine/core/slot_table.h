// The 36 sentinel slots of nanscope's own trainer, defined once, and the table in effect: a run of
// another trainer (written through the SDK, docs/sdk.md) brings its own slots, which the programs
// put in effect when they open its run file. Index i here is index i in HDF5, JSON, the CLI and
// the GUI. `rank` is the dataflow rank: the order in which a step finalises each slot's buffer,
// used to name the entry point of a NaN (the fired slot finalised first at the earliest firing
// step).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope {

inline constexpr int kSlotCount = 36;

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
};

// What a slot's buffer is to the health fields and the watches (SlotInfo::roles, bits).
enum SlotRole : std::uint8_t {
  kRoleC51Rows = 1,     // rows of C51 probabilities: c51_mass_error measures their mass
  kRoleLogProbs = 2,    // ... held as log-probabilities
  kRoleLseInput = 4,    // logits a logsumexp takes: the cql_margin watch
  kRoleReluOutput = 8,  // a relu's output: the dead_relu watch
};

struct SlotInfo {
  int index;
  std::string_view name;
  Phase phase;                 // the phase in which the check runs
  Phase written_in;            // the phase whose work writes the buffer (a post-backward check
                               // reads a buffer the backward wrote earlier in the step)
  std::string_view call_site;  // where in that phase
  std::string_view producer;   // the operation that writes the buffer
  std::string_view buffer;     // what the buffer holds, with its shape
  int rank;                    // dataflow rank (0 = finalised first)
  bool iqn_only;               // absent when loss.lambda_iqn = 0
  // The slots whose buffers the step computes from this one directly (through buffers that are
  // not slots), bit i for slot i: where a non-finite value in this buffer travels next, within
  // the same step (docs/trainer.md's dataflow; docs/slots.md lists them).
  std::uint64_t consumers;
  // Checked only once the user asks (sentinel.undefer): the slot starts in the deferred state.
  bool starts_deferred = false;
  std::uint8_t roles = 0;            // SlotRole bits
  std::string_view phase_text = {};  // a trainer's own phase name (phase_name(phase) when empty)
};

// The phase a slot's check runs in, as files and views name it.
std::string_view slot_phase(const SlotInfo& s);

// A set of slots as a bit mask (bit i: slot i).
constexpr std::uint64_t slot_bits(std::initializer_list<int> slots) {
  std::uint64_t m = 0;
  for (int s : slots) m |= std::uint64_t{1} << s;
  return m;
}
static_assert(kSlotCount <= 64, "slot sets are 64-bit masks");

// The table in effect: always kSlotCount entries; a trainer with fewer slots has its own first and
// unnamed rows after them that pad the fixed-width tables (never checked, never shown).
const std::array<SlotInfo, kSlotCount>& slot_table();
// How many slots the trainer in effect has (kSlotCount for nanscope's own).
int slot_count();
// A fingerprint of nanscope's own trainer's table (each slot's index, name, phases, rank,
// consumers, roles and flags, FNV-1a): two builds agree on it only when they compiled the same
// table. The CUDA plugin's handshake compares it (backend_choice/cuda_plugin_api.h).
std::uint64_t builtin_slot_table_fingerprint();
// Whether nanscope's own trainer's table is in effect (the slots with built-in meaning: the
// backward entry of 33-35, the C51 and IQN health fields, the scenarios).
bool builtin_slots();
// Changes whenever another table is put in effect (views that cache rows compare it).
std::uint64_t slot_table_generation();
// The trainer whose table is in effect: "nanscope", or the name an SDK run recorded.
const std::string& slot_trainer();

// A slot of another trainer's table, as its run file records it (/slots).
struct TrainerSlot {
  std::string name, phase, buffer;
  int rank = 0;                 // its dataflow order: 0 = finalised first in a step
  std::uint64_t consumers = 0;  // bit i: slot i reads this slot's buffer within the step
};
// What is wrong with a trainer's slot name ("" when nothing): it is also part of its dumps' file
// names, so 1-31 letters, digits, '_', '.' or '-', not starting with '.' or '-'.
std::string slot_name_problem(const std::string& name);
// What is wrong with a trainer's name ("" when nothing): 1-63 printable characters, no ',', not
// "nanscope".
std::string trainer_name_problem(const std::string& name);
// Puts a trainer's table in effect for the whole process (what a run file of that trainer is read
// and shown with); the table is checked first: 1 to kSlotCount slots, names unique, non-empty and
// printable, consumers within the table. Returns what is wrong ("" when it took effect).
// Not thread-safe: called while no run is being read or stepped.
std::string use_trainer_slots(const std::string& trainer, const std::vector<TrainerSlot>& slots);
void use_builtin_slots();
// The slots that start deferred, as "31" (or "31, 5"), for messages and docs.
std::string deferred_slots_text();
const SlotInfo& slot_info(int index);
// By name ("bn_d_concat") or by index as text ("32").
std::optional<int> find_slot(std::string_view name_or_index);
// The slot and every slot its buffer reaches within the step, following the consumers; a slot
// absent this run (bit clear in `present`) passes its inputs on to its own consumers (without
// the IQN head the encoder reads the trunk gradient directly). Only present slots are returned.
std::uint64_t downstream_closure(int slot, std::uint64_t present);
std::vector<int> slots_of(std::uint64_t mask);

// The slot's row of the table in docs/slots.md (a test keeps the document and the table equal).
std::string slot_markdown_row(const SlotInfo& s);

}  // namespace nanscope
