#include "models/npy_file.h"

#include <QFile>
#include <QSaveFile>
#include <QStringList>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace nanscope::gui {

namespace {

// Written whole or not at all: a full disk leaves no half file behind.
QString commit(QSaveFile& f, const QString& path) {
  if (!f.commit()) return QString("%1: %2").arg(path, f.errorString());
  return {};
}

}  // namespace

QString write_npy(const QString& path, const std::vector<std::int64_t>& shape,
                  const std::vector<float>& values) {
  QStringList dims;
  for (auto d : shape) dims << QString::number(d);
  const QString tuple = dims.size() == 1 ? "(" + dims.front() + ",)" : "(" + dims.join(", ") + ")";
  QByteArray header =
      QString("{'descr': '<f4', 'fortran_order': False, 'shape': %1, }").arg(tuple).toLatin1();
  // The magic (6), the version (2) and the header's length (2), then the header padded with
  // spaces and ended by a newline so that the data starts on a multiple of 64 bytes.
  const qsizetype unpadded = 10 + header.size() + 1;
  header.append(QByteArray((64 - unpadded % 64) % 64, ' '));
  header.append('\n');
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return QString("%1: %2").arg(path, f.errorString());
  const char magic[] = "\x93NUMPY\x01\x00";
  f.write(magic, 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_le, 2);
  f.write(header);
  // float32 little-endian: the host's order on the machines nanscope builds for (x86-64, arm64).
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<qint64>(values.size() * sizeof(float)));
  return commit(f, path);
}

QString write_values_csv(const QString& path, const std::vector<float>& values) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text))
    return QString("%1: %2").arg(path, f.errorString());
  f.write("flat_index,value\n");
  char line[64];
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (std::isnan(v))
      std::snprintf(line, sizeof line, "%zu,nan\n", i);
    else if (std::isinf(v))
      std::snprintf(line, sizeof line, "%zu,%s\n", i, v > 0 ? "inf" : "-inf");
    else
      std::snprintf(line, sizeof line, "%zu,%.9g\n", i, static_cast<double>(v));  // round-trips
    f.write(line);
  }
  return commit(f, path);
}

}  // namespace nanscope::gui
