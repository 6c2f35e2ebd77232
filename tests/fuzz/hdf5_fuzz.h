// The run-file and dump harnesses' common step. libhdf5 1.10 can crash on corrupt metadata, which
// nanscope contains by reading files of unknown origin in a child process first (io/file_guard.h);
// the harness does the same with fork(): the child reads the file with the default signal
// dispositions, and if it dies of a signal the file is one the product refuses as a corrupt HDF5
// file. Otherwise the parent reads it under the sanitizers and the fuzzer, where an error in
// nanscope's own code is a crash. A child that exits non-zero (a sanitizer report in it) is one too.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "core/errors.h"

// The memcpy interceptor would report libhdf5's own overlapping copies on corrupt files as if they
// were ours; leaks on libhdf5's error paths are not ours either.
extern "C" const char* __asan_default_options() {
  return "replace_intrin=0:detect_leaks=0:allocator_may_return_null=1";
}

namespace nanscope::fuzz {

template <class Read>
int read_contained(Read&& read) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
    alarm(20);  // a read that never ends dies of SIGALRM: refused as corrupt, as file_guard does
    try {
      read();
    } catch (const Error&) {
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 0;  // libhdf5 crashed on it: the product refuses it (exit 78)
  if (WEXITSTATUS(status) != 0) std::abort();  // a sanitizer report in the child
  try {
    read();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace nanscope::fuzz
