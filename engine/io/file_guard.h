// Files of unknown origin (a dump mailed by a colleague, a run file copied off a crashed node) are
// read once in a short-lived child process before the real read. libhdf5 1.10 can crash on
// corrupt metadata, and no check in nanscope can prevent that; in a child, such a crash (or a
// read that never ends) becomes a DataError "corrupt HDF5 file" (exit 78) for the caller, and the
// process that asked (a GUI with a live run, a replay) stays up. docs/files.md states the trust
// model. Files nanscope has just written itself are read directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// The command that reads a file and exits: `argv` then the path; e.g. {"/proc/self/exe",
// "--validate-file"} for a program that has such a mode. Empty: no child, the file is read
// directly (library users, tests of the readers themselves).
using FileValidator = std::vector<std::string>;

// How long the child may take to read a file of `file_bytes`: 3 s for what any file needs, plus a
// second per 20 MB it holds. A sound file's read is bounded by its bytes (a run file of 150 KB
// reads in about 50 ms, one of 1 GB at disk speed well inside its 54 s); a damaged one can make
// libhdf5 loop or fill gigabytes from a few corrupt bytes (a string attribute's length, a
// dataspace's size), and is then refused within seconds rather than after a minute at full CPU.
double validation_budget_s(std::uintmax_t file_bytes);

// Runs the validator on `path`; throws DataError when the child dies of a signal or runs past
// `timeout_s` (by default the file's validation_budget_s). A child that exits with an error is not
// reported here: the caller's own read reports the same error, with its message, without crashing.
void validate_in_child(const std::string& path, const FileValidator& validator,
                       std::optional<double> timeout_s = std::nullopt);

// The child's side: reads `path` whole as what its content says it is (run file or dump).
// Returns the exit code (0, or the error kind's), printing the error on stderr.
int read_file_for_validation(const std::string& path);

}  // namespace nanscope
