// The offline dataset of one fold: features, the behaviour policy's branched actions, n-step
// returns and next-bar targets, over one walk-forward window of the bar series.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "data/bars.h"

namespace nanscope {

inline constexpr int kReturnLags = 16;    // last log returns in the state
inline constexpr int kFeatureCount = 24;  // 16 returns + 4 bar statistics + 3 position + 1 time
inline constexpr int kLookback = 64;      // bars of history a state needs (log-volume z-score)
inline constexpr int kBranches = 3;       // direction, size, exit
inline constexpr int kSubActions[kBranches] = {3, 3, 2};
inline constexpr int kActionTotal = 8;
inline constexpr int kNextBarTargets = 2;  // normalised next log return and log range

// One fold's window of bars: [begin_bar, end_bar).
struct FoldWindow {
  int fold = 0;
  int begin_bar = 0;
  int end_bar = 0;
};

// Consecutive equal windows over the series (the last one takes the remainder). Throws ConfigError
// when a window is too short to hold a single transition.
std::vector<FoldWindow> plan_folds(int bar_count, int folds, int n_step);

struct TransitionSet {
  int fold = 0;
  int first_bar = 0;  // bar index of transition 0
  int count = 0;
  std::vector<double> state;         // [count, kFeatureCount]
  std::vector<double> next_state;    // [count, kFeatureCount], s_{t+n}
  std::vector<std::int32_t> action;  // [count, kBranches]
  std::vector<double> reward;        // one-step reward r_t of the behaviour action
  std::vector<double> ret;           // n-step return R_t
  std::vector<double> done;          // 1 when the n-step window reaches the end of the fold
  std::vector<double> next_bar;      // [count, kNextBarTargets]
};

// Runs the seeded behaviour policy (noisy momentum) over the window and builds its transitions.
TransitionSet build_transitions(const BarSeries& series, const FoldWindow& window,
                                const Config& config);

// The state features of bar t given the behaviour position held entering t (-1, 0, +1 times a
// size) and how many bars it has been held. Needs t >= kLookback.
void bar_features(const BarSeries& series, int t, double position, int bars_held, double* out);

}  // namespace nanscope
