// Builds the window's updates from a live session (engine thread): each carries the session's
// current scalars and what changed since the update before it, so its cost follows what changed,
// not the run's length. A new session (or a window that lost track) starts over with a reset.
#pragma once

#include <QString>

#include "models/snapshot.h"
#include "session/session.h"

namespace nanscope::gui {

class LiveUpdates {
 public:
  // The next update replaces the window's picture (a new session, or the window asked again).
  void restart() {
    reset_ = true;
    ++epoch_;
  }
  UpdatePtr make(Session& s, bool running, double rate, const QString& scenario);
  quint64 last_seq() const { return seq_; }

 private:
  quint64 seq_ = 0;
  std::uint64_t epoch_ = 0;
  bool reset_ = true;
  std::size_t steps_ = 0, events_ = 0, fold_ = 0;  // what the window holds
};

// The scalars of a live session.
SnapshotHead live_head(Session& s, bool running, double rate, const QString& scenario);
StepRow step_row(const StepRecord& r);

// The step whose buffer a live slot holds now: the step in progress when its producer has run in
// it (phase stepping), otherwise the last finished step; nullopt when no step has written it.
struct StepRef {
  int fold, step;
  bool in_progress;
};
std::optional<StepRef> live_buffer_step(const Session& s, int slot);

}  // namespace nanscope::gui
