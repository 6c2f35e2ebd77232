// OHLCV bars: the synthetic generator (the embedded default) and the CSV loader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace nanscope {

struct Bar {
  double timestamp = 0;  // seconds since the epoch (synthetic: bar index)
  double open = 0, high = 0, low = 0, close = 0, volume = 0;
};

struct BarSeries {
  std::vector<Bar> bars;
  std::string source;  // "synthetic(seed=...)" or the CSV path
};

// GARCH(1,1) log returns with Student-t innovations (unit variance) plus rare normal jumps;
// volume log-normal and correlated with |return|. Deterministic in (params, seed, count).
BarSeries generate_synthetic_bars(const DataConfig& params, std::uint64_t seed, int count);

// Reads `timestamp,open,high,low,close,volume` with a header line. Rejects malformed rows with a
// DataError naming file, line and column; non-finite values are kept only when keep_bad_rows.
BarSeries load_csv_bars(const std::string& path, bool keep_bad_rows);

// The bars of a config: synthetic or CSV.
BarSeries load_bars(const Config& config);

}  // namespace nanscope
