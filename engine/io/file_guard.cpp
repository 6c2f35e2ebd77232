#include "io/file_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/errors.h"
#include "io/dump_file.h"
#include "io/file_kind.h"
#include "io/run_file.h"

extern char** environ;

namespace nanscope {

double validation_budget_s(std::uintmax_t file_bytes) {
  return 3.0 + static_cast<double>(file_bytes) / 20e6;
}

void validate_in_child(const std::string& path, const FileValidator& validator,
                       std::optional<double> timeout) {
  if (validator.empty()) return;
  std::error_code size_error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, size_error);
  const double timeout_s = timeout ? *timeout : validation_budget_s(size_error ? 0 : bytes);
  std::vector<std::string> args = validator;
  args.push_back(path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&io, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // Under AddressSanitizer (the sanitizer builds), the child's crash must stay a crash: ASan would
  // turn a SIGSEGV into a report and exit 1. Nothing reads these variables in a normal build.
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ASAN_OPTIONS=", 13) != 0) env_text.emplace_back(*e);
  const char* asan = std::getenv("ASAN_OPTIONS");
  env_text.push_back(
      std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") +
      "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:detect_leaks=0");
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, argv[0], &io, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&io);
  if (err != 0)
    throw InternalError(
        fmt::format("cannot start the file check {} ({})", validator[0], std::strerror(err)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR)
      throw InternalError(
          fmt::format("waiting for the file check failed ({})", std::strerror(errno)));
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw DataError(fmt::format("{}: corrupt HDF5 file (reading it did not finish in {:.1f} s)",
                                  path, timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFSIGNALED(status))
    throw DataError(
        fmt::format("{}: corrupt HDF5 file (the HDF5 library crashed reading it: signal {}, {})",
                    path, WTERMSIG(status), strsignal(WTERMSIG(status))));
}

int read_file_for_validation(const std::string& path) {
  try {
    if (detect_file_kind(path) == FileKind::Dump)
      (void)read_dump(path);
    else {
      const RunFileData r = read_run_file(path);
      // Whole: every checkpoint's state too (what time travel reads one at a time).
      for (std::size_t i = 0; i < r.checkpoints.size(); ++i) (void)read_run_checkpoint(path, i);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return exit_code_for(e.kind());
  }
}

}  // namespace nanscope
