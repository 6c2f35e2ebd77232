// The run-file and dump harnesses' common step. libhdf5 1.10 can crash or loop on corrupt metadata,
// which nanscope contains by reading files of unknown origin in a child process first
// (io/file_guard.h); the harness does the same with fork(): the child reads the file with the
// default signal dispositions and its stderr in a pipe. A child killed by a signal is a file the
// product refuses as a corrupt HDF5 file. A child that exits non-zero made a sanitizer report: when
// the report's error stack starts in libhdf5 (or in an interceptor libhdf5 called), the library is
// at fault and the product refuses the file the same way; when it starts in nanscope's code, it is
// a bug and the harness crashes with the report. A child that read the file cleanly is followed by
// the same read in the fuzzer's own process, under its coverage.
#pragma once

#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

#include "core/errors.h"

// The memcpy interceptor would report libhdf5's overlapping copies; leaks on libhdf5's error paths
// are not nanscope's; libhdf5 asks malloc for sizes read from corrupt metadata and handles NULL.
extern "C" const char* __asan_default_options() {
  return "replace_intrin=0:detect_leaks=0:allocator_may_return_null=1";
}

namespace nanscope::fuzz {

// Whether a sanitizer report's first stack is libhdf5's: its first frame outside the sanitizer's
// runtime (its interceptors, malloc, strdup, memcpy, ..., and its own checks, __asan::..., which
// report a heap chunk an uninstrumented writer overwrote when libhdf5 frees it) lies in libhdf5.
inline bool report_is_libhdf5s(const std::string& report) {
  static const std::regex frame(R"(^\s+#(\d+) 0x[0-9a-f]+\s+(?:in (\S+)\s+)?\(?([^\s)+]+))");
  static const std::regex interceptor(
      R"(^(__interceptor_)?(malloc|calloc|realloc|free|strdup|strndup|strlen|memcpy|memmove|memset|memcmp|strcmp|strncpy|strcpy|operator)$)");
  std::istringstream lines(report);
  int seen = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, frame)) {
      if (seen > 0) break;  // the end of the first stack
      continue;
    }
    ++seen;
    const std::string fn = m[2], where = m[3];
    if (where.find("libhdf5") != std::string::npos) return true;
    if (fn.rfind("__asan", 0) == 0 || fn.rfind("__sanitizer", 0) == 0) continue;
    if (!std::regex_match(fn, interceptor))
      return false;  // a frame of nanscope's (or the C library's)
  }
  return false;
}

template <class Read>
int read_contained(Read&& read) {
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
    alarm(5);  // a read that never ends (small fuzz files read in ms) dies of SIGALRM: refused, as
               // file_guard does
    try {
      read();
    } catch (const Error&) {
    }
    _exit(0);
  }
  close(err[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;)
    report.append(buf, static_cast<std::size_t>(n));
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return 0;  // libhdf5 crashed or looped on it: the product refuses it (78)
  if (WEXITSTATUS(status) != 0) {
    if (report_is_libhdf5s(report)) return 0;  // a sanitizer caught libhdf5 itself: refused as well
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
