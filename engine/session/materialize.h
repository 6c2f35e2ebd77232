// Time travel: any step of a fold recomputed, every slot's buffer bit for bit what the run had,
// from the latest checkpoint at or before it (docs/files.md, "Checkpoints"). The recomputation
// runs on a session of its own, with the run's config, injections and graph mode, on the run's
// backend or another one (then it agrees within float32 rounding, and says so).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "io/dump_file.h"
#include "io/run_file.h"
#include "model/backend.h"
#include "model/check_bank.h"
#include "session/session.h"

namespace nanscope {

struct MaterializeRequest {
  int fold = 0, step = 0;
  std::vector<int> slots;  // empty: every slot that exists in the run
};

struct MaterializedSlot {
  int index = 0;
  std::vector<std::int64_t> shape;
  std::vector<float> values;  // the buffer after the step, as a run halted there holds it
};

struct MaterializedStep {
  int fold = 0, step = 0;
  std::int64_t global_step = 0;
  int checkpoint_step = 0;  // the checkpoint it started from (the state before that step)
  int steps_run = 0;        // steps recomputed, the requested one included
  double ms = 0;            // wall time of the recomputation
  std::string backend;      // the backend that recomputed it
  BackendKind backend_kind = BackendKind::Cpu;
  bool graph = false;  // whole steps as the step graph
  std::vector<MaterializedSlot> slots;
  std::vector<StepRecord> records;  // every recomputed step, in order (the requested one last)
  StepContext context;              // the state before the step and its batch as sampled
};

using BackendFactory = std::function<std::unique_ptr<Backend>(const Config&)>;

class Materializer {
 public:
  // `run_config`: the run's config as recorded (its injections are in inject.faults).
  Materializer(const Config& run_config, const BackendFactory& make_backend, bool graph);
  ~Materializer();
  const Config& config() const { return config_; }
  Backend& backend() { return session_->backend(); }

  // Recomputes (request.fold, request.step) from `from`, a checkpoint of that fold at or before
  // the step. `cancel` is asked between steps (nullopt when it said so); `progress` hears
  // (steps done, steps in all). Throws UsageError for a step before the checkpoint or outside the
  // run, DataError for a checkpoint that does not fit the run's model.
  // `keep`, when given, receives the states the recomputation passes through near the request,
  // as checkpoints: the state before each of the kNeighbourStates steps before it, before the
  // request itself and after it (a neighbouring cell is then one step away, not a re-run from
  // the run's checkpoint). Those last steps then run one piece each.
  static constexpr int kNeighbourStates = 16;
  std::optional<MaterializedStep> materialize(const Checkpoint& from,
                                              const MaterializeRequest& request,
                                              const std::function<bool()>& cancel = {},
                                              const std::function<void(int, int)>& progress = {},
                                              const std::function<void(Checkpoint&&)>& keep = {});

 private:
  Config config_;
  std::unique_ptr<Session> session_;
};

// The run file's checkpoint to recompute (fold, step) from: the row of the fold's latest one at or
// before the step (nullopt: none).
std::optional<std::size_t> latest_checkpoint_row(const RunFileData& run, int fold, int step);
// The same, read from `path`; DataError naming the file and the setting that records checkpoints
// when it holds none, or none of that fold at or before the step.
Checkpoint file_checkpoint_for(const RunFileData& run, const std::string& path, int fold, int step);

// How a recomputed step agrees with what the run recorded: the slots' health of every
// recomputed step against /steps/health (every field bit for bit on the run's own backend), and
// each recomputed buffer against the same slot in a dump of that step, where one exists.
struct RunAgreement {
  int steps_compared = 0;
  bool health_bit_equal = true;
  // The largest relative difference of any health field (a mean's relative to the slot's rms).
  double health_max_rel = 0;
  std::string dump;  // the dump compared with (empty: none of that step)
  int dump_slots = 0;
  double dump_max_abs = 0;  // the largest absolute difference of any dumped element (finite)
  bool dump_bit_equal = true;
};
// The recomputed step as a dump (docs/files.md: every slot recomputed, its context, the run's
// config), replayable with `nanscope-run replay`; `run_file` is recorded as given.
DumpData materialized_dump(const MaterializedStep& m, const Config& run_config,
                           const std::string& run_config_toml, const ParamLayout& layout,
                           const std::string& run_file);

RunAgreement agreement_with_run(const MaterializedStep& m, const RunFileData& run,
                                const std::string& run_dir);

}  // namespace nanscope
