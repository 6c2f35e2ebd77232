#include "io/file_kind.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "io/h5.h"

namespace nanscope {

FileKind detect_file_kind(const std::string& path) {
  h5::Handle file = h5::open_read(path);
  // A dump holds /context (the step's inputs); a run file /folds and /steps.
  if (h5::exists(file, "context") && h5::exists(file, "slots")) return FileKind::Dump;
  if (h5::exists(file, "folds") || h5::exists(file, "steps")) return FileKind::RunFile;
  throw DataError(
      fmt::format("{}: not a nanscope run file or dump (no /folds, /steps or /context)", path));
}

}  // namespace nanscope
