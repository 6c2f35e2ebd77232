// Session's recording state (private to the session's .cpp files).
#pragma once

#include <exception>
#include <future>
#include <string>
#include <vector>

#include "io/dump_file.h"
#include "session/session.h"

namespace nanscope {

struct Session::Recording {
  std::string dir;
  std::string created_utc;
  std::vector<std::string> dumps;
  // Dumps being written off the training thread; joined (and their errors raised) before the run
  // file that names them is written.
  std::vector<std::future<void>> writes;

  void join_writes() {
    std::exception_ptr first;
    for (auto& w : writes) {
      try {
        w.get();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    writes.clear();
    if (first) std::rethrow_exception(first);
  }
};

}  // namespace nanscope
