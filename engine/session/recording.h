// Session's recording state (private to the session's .cpp files).
#pragma once

#include <string>
#include <vector>

#include "io/dump_file.h"
#include "session/session.h"

namespace nanscope {

struct Session::Recording {
  std::string dir;
  std::string created_utc;
  std::vector<std::string> dumps;
  // Per step: the slots captured at their first fire, the state before the step, the batch.
  std::vector<DumpSlot> pending;
  bool state_captured = false;
  bool pre_update_taken = false;
  StateSnapshot state, pre_update;
  BatchContext batch;
  struct Original {
    int slot;
    std::size_t index;
    double value;
  };
  std::vector<Original> injected;  // values a transient injection overwrote this step

  void begin_step() {
    pending.clear();
    state_captured = pre_update_taken = false;
    injected.clear();
  }
};

}  // namespace nanscope
