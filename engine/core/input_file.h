// The one check every input file passes before it is opened (CSV bars, config, run files, dumps):
// it exists (else MissingInputError, exit 66), and it is a regular file no larger than a bound
// (else DataError naming it, exit 78): a directory, a pipe with no writer, a device such as
// /dev/zero or a symlink loop is refused at once instead of blocking, reading forever or throwing
// from std::filesystem. Uses the error_code overloads, so nothing escapes as exit 70.
#pragma once

#include <cstdint>
#include <string>

namespace nanscope {

// `what`: "config file", "CSV file", ... for the messages. Returns the file's size in bytes.
std::uintmax_t check_input_file(const std::string& path, const char* what,
                                std::uintmax_t max_bytes);

}  // namespace nanscope
