// Dump files: one per step in which some slot first fired in its fold, holding each such slot's
// buffer as the check saw it, with everything needed to replay the step (docs/files.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sentinel.h"
#include "model/backend.h"

namespace nanscope {

inline constexpr std::int64_t kSchemaVersion = 1;

struct DumpSlot {
  int index = 0;
  std::vector<std::uint64_t> shape;
  std::vector<float> values;  // float32, as the contract stores slot buffers
  ScanResult scan;            // flags, counts, first bad index
  // An SDK trainer's float64 slot, in its type: written as a float64 dataset (then `values` is
  // empty); read back, `values` also holds it rounded to float32 for the viewers.
  std::vector<double> values64;
};

struct DumpData {
  int fold = 0, step = 0;
  std::int64_t global_step = 0;
  int entry_slot = -1;
  std::string config_toml, backend, nanscope_version, run_file;
  std::string path;  // the file it was read from (for messages)
  // The slot table of the trainer whose step it holds (attribute `trainer`): nanscope's own, or an
  // SDK trainer's, which the dump carries (/trainer_slots).
  SlotTableRef table = SlotTable::builtin();
  std::uint64_t seed = 0;
  bool context_f64 = false;  // context written as float64 (CPU float64 mode)
  std::vector<DumpSlot> slots;
  BatchContext batch;
  std::vector<std::string> param_names;  // layout order, as in `state`
  std::vector<std::vector<std::uint64_t>> param_shapes;
  StateSnapshot state;                             // before the step
  StepFlags flags = StepFlags(kBuiltinSlotCount);  // every slot's flags, as wide as the table
  // A dump that time travel recomputed (nanscope-run materialize): the checkpoint's step it
  // started from, and "materialized" (attributes `origin`, `checkpoint_step`); a first fire's
  // dump has neither.
  std::string origin;
  int checkpoint_step = -1;
};

// The file name of the contract: fold{F:03}_step{S:08}_{entry-slot-name}.h5
std::string dump_file_name(const SlotTable& table, int fold, int step, int entry_slot);

void write_dump(const std::string& path, const DumpData& dump);  // atomic (.tmp then rename)
// Refuses missing, foreign, truncated and newer-schema files with a DataError naming the file.
DumpData read_dump(const std::string& path);

}  // namespace nanscope
