// What a nanscope file is, by its content (not its name): a run file or a dump. The workbench's
// File > Open and its command line decide with it.
#pragma once

#include <string>

namespace nanscope {

enum class FileKind { RunFile, Dump };

// Throws MissingInputError, or DataError naming the file when it is not HDF5 or neither kind.
FileKind detect_file_kind(const std::string& path);

}  // namespace nanscope
