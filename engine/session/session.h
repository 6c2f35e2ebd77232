// A training session: the bar series, its walk-forward folds and a backend, stepped phase by phase
// or step by step. The GUI's engine thread and nanscope-run both drive one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/config.h"
#include "data/bars.h"
#include "data/transitions.h"
#include "model/backend.h"

namespace nanscope {

struct StepRecord {
  int fold = 0;
  int step = 0;
  std::int64_t global_step = 0;
  StepLosses losses;
};

struct FoldSummary {
  int fold = 0;
  int steps = 0;
  double loss_first = 0, loss_last = 0;
  double c51_first = 0, c51_last = 0;
};

class Session {
 public:
  // Loads the bars and plans the folds; throws ConfigError / DataError / MissingInputError.
  Session(const Config& config, std::unique_ptr<Backend> backend);

  const Config& config() const { return config_; }
  Backend& backend() { return *backend_; }
  const BarSeries& bars() const { return bars_; }
  const std::vector<FoldWindow>& windows() const { return windows_; }

  bool finished() const { return fold_ >= config_.run.folds; }
  int fold() const { return fold_; }
  int step_in_fold() const { return step_; }
  std::int64_t global_step() const { return global_step_; }
  // The phase step_phase() runs next (Sample when between steps).
  Phase next_phase() const { return static_cast<Phase>(next_phase_); }

  // Runs the next phase; completes the step after the optimizer. Returns the phase it ran.
  Phase step_phase();
  // Runs the rest of the current step (a whole step when between steps).
  void step();
  // Runs steps until `stop` says so after a step, or the run ends.
  void run(const std::function<bool(const StepRecord&)>& stop = {});

  const std::vector<StepRecord>& history() const { return history_; }
  const std::vector<FoldSummary>& folds() const { return folds_; }

 private:
  void begin_fold();
  void finish_step();

  Config config_;
  std::unique_ptr<Backend> backend_;
  BarSeries bars_;
  std::vector<FoldWindow> windows_;
  int fold_ = 0, step_ = 0, next_phase_ = 0;
  std::int64_t global_step_ = 0;
  bool fold_loaded_ = false;
  std::vector<StepRecord> history_;
  std::vector<FoldSummary> folds_;
};

}  // namespace nanscope
