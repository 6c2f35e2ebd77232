// The run-file and dump harnesses' common step. libhdf5 1.10 can crash or loop on corrupt metadata,
// which nanscope contains by reading files of unknown origin in a child process first
// (io/file_guard.h); the harness does the same with fork(): the child reads the file with the
// default signal dispositions and its stderr in a pipe. A child killed by a signal is a file the
// product refuses as a corrupt HDF5 file. A child that exits non-zero made a sanitizer report: when
// the report's error stack starts in libhdf5 (or in an interceptor libhdf5 called), or is a heap
// chunk found overwritten when the child recycles the chunks freed during the read, the library is
// at fault and the product refuses the file the same way; when it starts in nanscope's code, it is
// a bug and the harness crashes with the report. A child that read the file cleanly is followed by
// the same read in the fuzzer's own process, under its coverage.
#pragma once

#include <poll.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "libhdf5_report.h"

// Copies are checked (replace_intrin=1): libhdf5's overlapping ones are reported in the child and
// refused as its faults; nanscope's are reported where they happen. Leaks on libhdf5's error paths
// are not nanscope's; libhdf5 asks malloc for sizes read from corrupt metadata and handles NULL.
// Each child recycles the freed chunks it inherited and those its read freed (below): a quarantine
// of 16 MB rather than 256 keeps that cheap (its pages are the parent's, copied on write); a chunk
// freed during a read is still checked in the child, when it is recycled during the read or after.
extern "C" const char* __asan_default_options() {
  return "replace_intrin=1:detect_leaks=0:allocator_may_return_null=1:quarantine_size_mb=16";
}

// A sanitizer's report in a contained child is printed whole: the read's alarm (below) stops as
// the report starts. Cut off by it, the child's death would read as libhdf5 looping, and a fault of
// nanscope's would be refused rather than reported. (In the fuzzer's own process the report ends
// the process anyway.)
extern "C" void __asan_on_error() {
  const itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
}

namespace nanscope::fuzz {

// libhdf5 is not instrumented: a chunk it overwrote during a read is found only when the allocator
// recycles it, which in the fuzzer's own process can be inputs later, in an unrelated free.
// Recycling every freed chunk at the end of the contained read puts the report in the child, under
// its input; this frame tells the classifier (libhdf5_report.h) that the chunks are the read's.
// The child's heap is not recycled before the read: it is the parent's, so that the read meets
// the heap the parent's own read of the file will meet (libhdf5's use of a chunk it freed is seen
// or not by where the allocator put that chunk). The chunks it inherits were freed after the last
// input's child found its own clean.
__attribute__((noinline, disable_tail_calls)) inline void recycle_chunks_freed_in_read() {
  __sanitizer_purge_allocator();
}

// The child's stderr into `report` until it closes (true) or `limit` has passed (false).
inline bool read_until_closed(int fd, std::string& report, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) std::abort();
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno != EINTR) std::abort();
    if (n == 0) return true;
    if (n > 0) report.append(buf, static_cast<std::size_t>(n));
  }
}

// `limit`: how long the child may live (the harnesses' default; a test of the limit sets less).
template <class Read>
int read_contained(Read&& read, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  int err[2];
  if (pipe(err) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(err[0]);
    dup2(err[1], STDERR_FILENO);
    // The child is a copy of the fuzzer: without its crash handlers and its death callback, which
    // would write a crash artifact for a fault the parent then classifies.
    __sanitizer_set_death_callback(nullptr);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM, SIGABRT}) signal(sig, SIG_DFL);
    // A read that never ends dies of SIGALRM: refused, as file_guard does. A fifth of a second: the
    // corpus's files read in about 10 ms under the sanitizers, and each loop libhdf5 falls into
    // costs the campaign this long (at 5 s, a minute's campaign ran about 230 inputs).
    itimerval limit{};
    limit.it_value.tv_usec = 200'000;
    setitimer(ITIMER_REAL, &limit, nullptr);
    try {
      read();
    } catch (const Error&) {
    }
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);  // the read is over: no alarm while recycling
    recycle_chunks_freed_in_read();
    _exit(0);
  }
  close(err[1]);
  // The child's alarm covers its read, not what comes before or after it (a fork of a process
  // with threads can deadlock, a report's symbolisation can stall), and libFuzzer's own alarm
  // interrupts the parent's calls (its handler is installed without SA_RESTART): a child still
  // there after this long is killed, so no wait here is ever without an end.
  std::string report;
  const bool finished = read_until_closed(err[0], report, limit);
  close(err[0]);
  if (!finished) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) std::abort();
  const bool clean = finished && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!clean) {
    // Killed by a signal (its alarm, a crash, or this deadline before it said anything): libhdf5
    // crashed or looped on it, and the product refuses it (78). A sanitizer's report, whole or
    // cut off by the deadline, is refused as well when it blames libhdf5.
    if (finished ? WIFSIGNALED(status) : report.empty()) return 0;
    if (report_is_libhdf5s(report)) return 0;
    std::fputs(report.c_str(), stderr);
    std::abort();  // a sanitizer report in nanscope's code
  }
  try {
    read();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace nanscope::fuzz
