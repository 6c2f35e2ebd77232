// The library's writer thread: run files and dumps are written off the trainer's thread, in the
// order they were handed over. A write that fails (a full disk, a directory gone) is kept as the
// writer's error, which the session reports when asked (ns_writer_status) or at its close; nothing
// already written is lost (every file is written atomically).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nanscope::sdk {

class RunWriter {
 public:
  RunWriter();
  ~RunWriter();  // finishes what was handed over
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  // A write to run later on the writer's thread; its exception's message becomes the error.
  void post(std::function<void()> write);
  // Waits until everything handed over so far has been written.
  void drain();
  // Every write's failure not yet taken, one message naming each ("" when none); taking them
  // clears them.
  std::string take_error();
  // The writes handed over and not yet done (the one being written included).
  int pending();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false, busy_ = false;
  std::vector<std::string> errors_;
  std::thread thread_;
};

}  // namespace nanscope::sdk
