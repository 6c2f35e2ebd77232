// The inspected buffer as numpy's .npy (format version 1.0, little-endian float32, C order: what
// numpy.load reads, bit for bit) and as CSV (flat index and value, every float written so that it
// reads back to the same bits; nan, inf and -inf as numpy writes them).
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

namespace nanscope::gui {

// Both return an empty string, or why the file could not be written (naming it).
QString write_npy(const QString& path, const std::vector<std::int64_t>& shape,
                  const std::vector<float>& values);
QString write_values_csv(const QString& path, const std::vector<float>& values);

}  // namespace nanscope::gui
