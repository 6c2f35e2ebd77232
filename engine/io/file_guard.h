// Files of unknown origin (a dump mailed by a colleague, a run file copied off a crashed node) are
// read once in a short-lived child process before the real read. libhdf5 1.10 can crash on
// corrupt metadata, and no check in nanscope can prevent that; in a child, such a crash (or a
// read that never ends) becomes a DataError "corrupt HDF5 file" (exit 78) for the caller, and the
// process that asked (a GUI with a live run, a replay) stays up. docs/files.md states the trust
// model. Files nanscope has just written itself are read directly.
#pragma once

#include <string>
#include <vector>

namespace nanscope {

// The command that reads a file and exits: `argv` then the path; e.g. {"/proc/self/exe",
// "--validate-file"} for a program that has such a mode. Empty: no child, the file is read
// directly (library users, tests of the readers themselves).
using FileValidator = std::vector<std::string>;

// Runs the validator on `path`; throws DataError when the child dies of a signal or runs past
// `timeout_s`. A child that exits with an error is not reported here: the caller's own read
// reports the same error, with its message, without crashing.
void validate_in_child(const std::string& path, const FileValidator& validator,
                       double timeout_s = 60);

// The child's side: reads `path` whole as what its content says it is (run file or dump).
// Returns the exit code (0, or the error kind's), printing the error on stderr.
int read_file_for_validation(const std::string& path);

}  // namespace nanscope
