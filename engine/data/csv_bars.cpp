#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>

#include "core/errors.h"
#include "core/input_file.h"
#include "data/bars.h"

namespace nanscope {
namespace {

constexpr const char* kColumns[] = {"timestamp", "open", "high", "low", "close", "volume"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A bar row is six numbers; a line longer than this is not one (a binary file, a device, a sparse
// file of zeros), refused before it is read whole.
constexpr std::size_t kMaxLineBytes = 4096;
constexpr std::uintmax_t kMaxCsvBytes = std::uintmax_t{8} << 30;  // 8 GiB: ~100 million bars

// Reads a line of at most kMaxLineBytes; false at the end of the input.
bool read_line(std::istream& in, std::string& text, bool& too_long) {
  text.clear();
  too_long = false;
  char c;
  bool any = false;
  while (in.get(c)) {
    any = true;
    if (c == '\n') return true;
    if (text.size() == kMaxLineBytes) {
      too_long = true;
      return true;
    }
    text.push_back(c);
  }
  return any;
}

}  // namespace

BarSeries load_csv_bars(const std::string& path, bool keep_bad_rows) {
  check_input_file(path, "CSV file", kMaxCsvBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open", path));

  auto fail = [&](long line, int column, const std::string& what) -> DataError {
    return DataError(fmt::format("{}:{}: column {} ({}): {}", path, line, column + 1,
                                 column >= 0 && column < 6 ? kColumns[column] : "?", what));
  };

  BarSeries series;
  series.source = path;
  std::string text;
  long line_no = 0;
  bool too_long = false;
  auto next_line = [&]() {
    if (!read_line(in, text, too_long)) return false;
    ++line_no;
    if (too_long)
      throw DataError(fmt::format("{}:{}: line longer than {} bytes (not a CSV of bars?)", path,
                                  line_no, kMaxLineBytes));
    return true;
  };
  if (!next_line())
    throw DataError(
        fmt::format("{}:1: empty file (expected the header "
                    "timestamp,open,high,low,close,volume)",
                    path));
  {
    std::string_view header = trim(text);
    if (header.substr(0, 3) == "\xEF\xBB\xBF")
      throw fail(line_no, 0, "the file starts with a UTF-8 byte-order mark; save it without one");
    std::size_t start = 0;
    for (int c = 0; c < 6; ++c) {
      std::size_t comma = header.find(',', start);
      std::string_view name = trim(header.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (name != kColumns[c])
        throw fail(line_no, c,
                   fmt::format("header must be timestamp,open,high,low,close,volume "
                               "(found '{}')",
                               name));
      if (comma == std::string_view::npos && c < 5)
        throw fail(line_no, c + 1, "header has fewer than 6 columns");
      if (c == 5 && comma != std::string_view::npos)
        throw fail(line_no, 6, "header has more than 6 columns");
      start = comma + 1;
    }
  }

  while (next_line()) {
    std::string_view row = trim(text);
    if (row.empty()) continue;
    double v[6];
    std::size_t start = 0;
    for (int c = 0; c < 6; ++c) {
      std::size_t comma = row.find(',', start);
      if (comma == std::string_view::npos && c < 5)
        throw fail(line_no, c + 1, fmt::format("missing (row has {} columns, expected 6)", c + 1));
      std::string_view cell = trim(row.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (c == 5 && comma != std::string_view::npos)
        throw fail(line_no, 6, "extra column (expected 6)");
      auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v[c]);
      if (cell.empty() || ec != std::errc() || ptr != cell.data() + cell.size())
        throw fail(line_no, c, fmt::format("not a number: '{}'", cell));
      if (!std::isfinite(v[c]) && !keep_bad_rows)
        throw fail(line_no, c,
                   fmt::format("non-finite value '{}' (set data.keep_bad_rows = true "
                               "to keep it)",
                               cell));
      start = comma + 1;
    }
    Bar bar{v[0], v[1], v[2], v[3], v[4], v[5]};
    // Consistency checks only make sense on finite rows; kept bad rows pass through as they are.
    bool finite = std::isfinite(bar.open) && std::isfinite(bar.high) && std::isfinite(bar.low) &&
                  std::isfinite(bar.close) && std::isfinite(bar.volume);
    if (finite) {
      for (int c = 1; c <= 4; ++c)
        if (v[c] <= 0) throw fail(line_no, c, fmt::format("price must be positive (got {})", v[c]));
      if (bar.volume < 0) throw fail(line_no, 5, fmt::format("negative volume ({})", bar.volume));
      // The features take log(volume): a zero volume is as bad a row as a NaN one.
      if (bar.volume == 0 && !keep_bad_rows)
        throw fail(line_no, 5,
                   "zero volume (its log is -inf; set data.keep_bad_rows = true to keep it)");
      if (bar.high < std::max({bar.open, bar.close, bar.low}))
        throw fail(line_no, 2, "high is below open, close or low");
      if (bar.low > std::min(bar.open, bar.close))
        throw fail(line_no, 3, "low is above open or close");
    }
    if (!series.bars.empty() && !(bar.timestamp > series.bars.back().timestamp))
      throw fail(line_no, 0, "timestamps must increase");
    series.bars.push_back(bar);
  }
  if (series.bars.empty()) throw DataError(fmt::format("{}: no data rows after the header", path));
  return series;
}

BarSeries load_bars(const Config& config) {
  if (config.data.source == DataSource::Csv)
    return load_csv_bars(config.data.csv, config.data.keep_bad_rows);
  BarSeries s = generate_synthetic_bars(config.data, config.run.seed, config.data.bars);
  if (config.data.corrupt_bar >= 0) {
    if (!config.data.keep_bad_rows)
      throw DataError(
          fmt::format("{}: bar {}: close is NaN (data.corrupt_bar); set "
                      "data.keep_bad_rows = true to keep it",
                      s.source, config.data.corrupt_bar));
    s.bars[static_cast<std::size_t>(config.data.corrupt_bar)].close =
        std::numeric_limits<double>::quiet_NaN();
    s.source += ", corrupt bar " + std::to_string(config.data.corrupt_bar);
  }
  return s;
}

}  // namespace nanscope
