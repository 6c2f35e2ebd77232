#include "core/input_file.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/errors.h"

namespace nanscope {

std::uintmax_t check_input_file(const std::string& path, const char* what,
                                std::uintmax_t max_bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw MissingInputError(fmt::format("no {} given (empty path)", what));
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory ||
      st.type() == fs::file_type::not_found)
    throw MissingInputError(fmt::format("{}: {} not found", path, what));
  if (ec) throw DataError(fmt::format("{}: cannot read the {} ({})", path, what, ec.message()));
  if (fs::is_directory(st))
    throw DataError(fmt::format("{}: is a directory, not a {}", path, what));
  if (!fs::is_regular_file(st))
    throw DataError(
        fmt::format("{}: not a regular file (a device, a pipe or a socket), not a {}", path, what));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot read the {} ({})", path, what, ec.message()));
  if (size > max_bytes)
    throw DataError(fmt::format("{}: {} bytes, more than a {} may hold ({} bytes)", path, size,
                                what, max_bytes));
  return size;
}

}  // namespace nanscope
