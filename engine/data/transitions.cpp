#include "data/transitions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "data/philox.h"

namespace nanscope {
namespace {

constexpr double kSizes[3] = {0.25, 0.5, 1.0};

double log_return(const BarSeries& s, int t) {
  return std::log(s.bars[t].close / s.bars[t - 1].close);
}

// Realised volatility (per bar, not annualised) over the last kReturnLags returns.
double realised_vol(const BarSeries& s, int t) {
  double acc = 0;
  for (int k = 0; k < kReturnLags; ++k) {
    double r = log_return(s, t - k);
    acc += r * r;
  }
  return std::sqrt(acc / kReturnLags);
}

}  // namespace

std::vector<FoldWindow> plan_folds(int bar_count, int folds, int n_step) {
  std::vector<FoldWindow> out;
  const int width = bar_count / folds;
  for (int k = 0; k < folds; ++k) {
    FoldWindow w{k, k * width, k == folds - 1 ? bar_count : (k + 1) * width};
    const int first_state = std::max(w.begin_bar, kLookback);
    const int transitions = (w.end_bar - 1) - first_state;
    if (transitions < std::max(2, n_step))
      throw ConfigError(fmt::format(
          "config: keys 'run.folds' / 'data.bars': fold {} spans bars [{}, {}) and holds {} "
          "transitions; each fold needs at least {} (the first {} bars are history only)",
          k, w.begin_bar, w.end_bar, std::max(transitions, 0), std::max(2, n_step), kLookback));
    out.push_back(w);
  }
  return out;
}

void bar_features(const BarSeries& s, int t, double position, int bars_held, double* f) {
  for (int k = 0; k < kReturnLags; ++k) f[k] = 100.0 * log_return(s, t - k);
  f[16] = 100.0 * realised_vol(s, t);
  const Bar& bar = s.bars[t];
  f[17] = 100.0 * (bar.high - bar.low) / bar.close;
  double mean = 0, sq = 0;
  for (int k = 0; k < kLookback; ++k) {
    double lv = std::log(s.bars[t - k].volume);
    mean += lv;
    sq += lv * lv;
  }
  mean /= kLookback;
  const double var = sq / kLookback - mean * mean;
  f[18] = (std::log(bar.volume) - mean) / std::sqrt(var > 1e-12 ? var : 1e-12);
  double close_mean = 0;
  for (int k = 0; k < kReturnLags; ++k) close_mean += s.bars[t - k].close;
  f[19] = 100.0 * (bar.close / (close_mean / kReturnLags) - 1.0);
  f[20] = position < 0 ? 1.0 : 0.0;
  f[21] = position == 0 ? 1.0 : 0.0;
  f[22] = position > 0 ? 1.0 : 0.0;
  f[23] = std::min(bars_held, 32) / 32.0;
}

TransitionSet build_transitions(const BarSeries& s, const FoldWindow& w, const Config& config) {
  const auto& d = config.data;
  const int first = std::max(w.begin_bar, kLookback);
  const int count = (w.end_bar - 1) - first;  // state t needs bar t + 1 for its reward
  TransitionSet ts;
  ts.fold = w.fold;
  ts.first_bar = first;
  ts.count = count;
  ts.state.resize(static_cast<std::size_t>(count) * kFeatureCount);
  ts.next_state.resize(ts.state.size());
  ts.action.resize(static_cast<std::size_t>(count) * kBranches);
  ts.ret.resize(count);
  ts.done.resize(count);
  ts.next_bar.resize(static_cast<std::size_t>(count) * kNextBarTargets);

  // Behaviour policy: noisy momentum. The episode starts flat at the window's start.
  std::vector<double>& reward = ts.reward;
  reward.resize(count);
  double position = 0;
  int held = 0;
  for (int i = 0; i < count; ++i) {
    const int t = first + i;
    bar_features(s, t, position, held, &ts.state[static_cast<std::size_t>(i) * kFeatureCount]);
    CounterRng rng(config.run.seed, DrawStream::Behaviour, static_cast<std::uint32_t>(t));
    const double sigma = realised_vol(s, t);
    double momentum = 0;
    for (int k = 0; k < 8; ++k) momentum += log_return(s, t - k);
    int dir, size, exit;
    if (rng.uniform() < d.behaviour_epsilon) {
      dir = static_cast<int>(u32_to_index(rng.next_u32(), 3));
      size = static_cast<int>(u32_to_index(rng.next_u32(), 3));
      exit = static_cast<int>(u32_to_index(rng.next_u32(), 2));
    } else {
      // Comparisons with NaN are false: a corrupt bar makes the policy go flat, small and wide.
      const double z = momentum / (sigma * std::sqrt(8.0));
      dir = z > 0.5 ? 2 : (z < -0.5 ? 0 : 1);
      size = std::abs(z) > 1.5 ? 2 : (std::abs(z) > 1.0 ? 1 : 0);
      exit = std::abs(log_return(s, t)) > 2.0 * sigma ? 0 : 1;
    }
    int32_t* a = &ts.action[static_cast<std::size_t>(i) * kBranches];
    a[0] = dir;
    a[1] = size;
    a[2] = exit;
    const double new_position = (dir - 1) * kSizes[size];
    double pnl = new_position * log_return(s, t + 1);
    if (exit == 0) {  // tight exit: a stop caps the bar's loss at two sigma (NaN passes through)
      const double stop = 2.0 * sigma * std::abs(new_position);
      pnl = pnl < -stop ? -stop : pnl;
    }
    reward[i] = d.reward_scale * (pnl - d.cost * std::abs(new_position - position));
    held = (new_position == position) ? held + 1 : 0;
    position = new_position;
    const Bar& next = s.bars[t + 1];
    ts.next_bar[static_cast<std::size_t>(i) * 2 + 0] = 100.0 * log_return(s, t + 1);
    ts.next_bar[static_cast<std::size_t>(i) * 2 + 1] = 100.0 * std::log(next.high / next.low);
  }
  // n-step returns, cut at the end of the window (the episode's terminal).
  const double gamma = config.model.gamma;
  for (int i = 0; i < count; ++i) {
    double r = 0, g = 1;
    for (int k = 0; k < d.n_step && i + k < count; ++k, g *= gamma) r += g * reward[i + k];
    ts.ret[i] = r;
    const bool done = i + d.n_step >= count;
    ts.done[i] = done ? 1.0 : 0.0;
    const int j = done ? count - 1 : i + d.n_step;
    std::copy_n(&ts.state[static_cast<std::size_t>(j) * kFeatureCount], kFeatureCount,
                &ts.next_state[static_cast<std::size_t>(i) * kFeatureCount]);
  }
  return ts;
}

}  // namespace nanscope
