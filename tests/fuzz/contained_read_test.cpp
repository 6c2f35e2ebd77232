// The fuzz harnesses' contained read (hdf5_fuzz.h) ends whatever its child does: a child stuck
// where its own alarm cannot end it (here: SIGALRM blocked, as in a deadlock after fork() or a
// stalled report) is killed at the parent's limit and its input refused, and the parent does not
// read the file itself. A child that reads cleanly is followed by the parent's own read.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "hdf5_fuzz.h"

int main() {
  using clock = std::chrono::steady_clock;
  int parent_reads = 0;
  const pid_t parent = getpid();
  const auto began = clock::now();
  const int stuck = nanscope::fuzz::read_contained(
      [&] {
        if (getpid() == parent) {
          ++parent_reads;
          return;
        }
        sigset_t alarm;
        sigemptyset(&alarm);
        sigaddset(&alarm, SIGALRM);
        sigprocmask(SIG_BLOCK, &alarm, nullptr);
        sleep(60);
      },
      std::chrono::milliseconds(500));
  const double seconds = std::chrono::duration<double>(clock::now() - began).count();
  if (stuck != 0 || parent_reads != 0 || seconds > 10) {
    std::fprintf(stderr, "a stuck child: returned %d after %.1f s, the parent read %d times\n",
                 stuck, seconds, parent_reads);
    return 1;
  }
  const int clean = nanscope::fuzz::read_contained([&] {
    if (getpid() == parent) ++parent_reads;
  });
  if (clean != 0 || parent_reads != 1) {
    std::fprintf(stderr, "a clean child: returned %d, the parent read %d times (want 1)\n", clean,
                 parent_reads);
    return 1;
  }
  std::printf(
      "contained_read_test: a stuck child killed after %.1f s and refused; a clean one "
      "followed by the parent's read\n",
      seconds);
  return 0;
}
