#include <cmath>

#include "data/bars.h"
#include "data/philox.h"

namespace nanscope {

BarSeries generate_synthetic_bars(const DataConfig& p, std::uint64_t seed, int count) {
  CounterRng rng(seed, DrawStream::Synthetic);
  BarSeries series;
  series.source = "synthetic(seed=" + std::to_string(seed) + ")";
  series.bars.reserve(static_cast<std::size_t>(count));

  // Student-t scaled to unit variance so that sigma keeps its meaning.
  const double t_scale = std::sqrt((p.student_nu - 2.0) / p.student_nu);
  double var = p.garch_omega / (1.0 - p.garch_alpha - p.garch_beta);  // unconditional variance
  double last_ret = 0.0;
  double close = 100.0;
  for (int t = 0; t < count; ++t) {
    var = p.garch_omega + p.garch_alpha * last_ret * last_ret + p.garch_beta * var;
    const double sigma = std::sqrt(var);
    double ret = sigma * t_scale * rng.student_t(p.student_nu);
    if (rng.uniform() < p.jump_prob) ret += p.jump_scale * rng.normal();
    const double open = close;
    close = open * std::exp(ret);
    // Intrabar excursions beyond open/close, scaled by the bar's volatility.
    const double up = std::abs(rng.normal()) * 0.5 * sigma;
    const double down = std::abs(rng.normal()) * 0.5 * sigma;
    Bar bar;
    bar.timestamp = static_cast<double>(t);
    bar.open = open;
    bar.close = close;
    bar.high = std::max(open, close) * std::exp(up);
    bar.low = std::min(open, close) * std::exp(-down);
    // Log-normal volume whose mean rises with the size of the move.
    bar.volume = std::exp(10.0 + 0.6 * std::abs(ret) / sigma + 0.4 * rng.normal());
    series.bars.push_back(bar);
    last_ret = ret;
  }
  return series;
}

}  // namespace nanscope
