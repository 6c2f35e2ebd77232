#include "session/step_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/errors.h"
#include "core/slot_table.h"

namespace nanscope {

std::optional<DefaultCompareSteps> default_compare_steps(const std::vector<bool>& fired,
                                                         std::optional<int> first_watch) {
  const int n = static_cast<int>(fired.size());
  if (n == 0) return std::nullopt;
  const auto fire = std::find(fired.begin(), fired.end(), true);
  if (fire != fired.end()) {
    const int b = static_cast<int>(fire - fired.begin());
    if (b == 0) return std::nullopt;
    return DefaultCompareSteps{{b - 1, b}, "last clean / first bad"};
  }
  if (first_watch && *first_watch > 0 && *first_watch < n)
    return DefaultCompareSteps{{*first_watch - 1, *first_watch},
                               "before the first watch trip / the trip"};
  // A trip at the fold's first step has no step before it: the trip and the step after it.
  if (first_watch && *first_watch == 0 && n > 1)
    return DefaultCompareSteps{{0, 1}, "the first watch trip (step 0) / the step after it"};
  return DefaultCompareSteps{
      {0, n - 1}, "the fold's first / last step: nothing fired or warned", false};
}

StepComparison compare_steps(const SlotTable& table, int fold, int step_a, const SlotHealthRows& a,
                             int step_b, const SlotHealthRows& b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  StepComparison c{fold, step_a, step_b, {}};
  const int slots = static_cast<int>(std::max(a.size(), b.size()));
  for (int s = 0; s < slots; ++s) {
    const HealthRow &x = health_at(a, s), &y = health_at(b, s);
    if (!measured(x) || !measured(y)) continue;
    SlotChange ch{s, x, y};
    ch.went_nonfinite = y[kHealthNonfinite] > 0 && x[kHealthNonfinite] == 0;
    const double ma = abs_max(x), mb = abs_max(y);
    if (std::isnan(ma) || std::isnan(mb))
      ch.growth = kNaN;
    else
      ch.growth = ma > 0 ? mb / ma : (mb > 0 ? kInf : 1.0);
    ch.mean_change = static_cast<double>(y[kHealthMean]) - static_cast<double>(x[kHealthMean]);
    ch.jumped =
        ch.went_nonfinite || ch.growth >= kJumpFactor || (std::isnan(mb) && !std::isnan(ma));
    c.rows.push_back(ch);
  }
  // What broke first: the slots that went non-finite, in dataflow order (a NaN's growth says
  // nothing; its path does), then the other slots that jumped, then the rest; within those, by
  // growth, the undefined ones last; ties in slot order.
  const auto rank = [&](int slot) { return table.contains(slot) ? table[slot].rank : slot; };
  std::stable_sort(c.rows.begin(), c.rows.end(), [&](const SlotChange& p, const SlotChange& q) {
    if (p.went_nonfinite != q.went_nonfinite) return p.went_nonfinite;
    if (p.went_nonfinite) return rank(p.slot) < rank(q.slot);
    if (p.jumped != q.jumped) return p.jumped;
    if (std::isnan(p.growth) != std::isnan(q.growth)) return std::isnan(q.growth);
    return p.growth > q.growth;
  });
  return c;
}

namespace {
// A number as the table writes it: "-" where there is none.
std::string cell(double v) {
  return std::isnan(v) ? std::string("-") : fmt::format("{:.4g}", v);
}
}  // namespace

std::string comparison_text(const SlotTable& table, const StepComparison& c) {
  std::string out = fmt::format(
      "fold {}: step {} vs step {} (the slots measured at both: new non-finite values first, then "
      "the jumps, then the largest growth; * "
      "jumped: |max| x{} or more, or non-finite values new at step {})\n",
      c.fold, c.step_a, c.step_b, kJumpFactor, c.step_b);
  out += fmt::format("  {:>2} {:<22} {:>11} {:>11} {:>10} {:>11} {:>11} {:>8} {:>8}\n", "#", "slot",
                     "absmax A", "absmax B", "growth", "mean A", "mean B", "bad A", "bad B");
  for (const SlotChange& r : c.rows)
    out += fmt::format("{} {:>2} {:<22} {:>11} {:>11} {:>10} {:>11} {:>11} {:>8g} {:>8g}\n",
                       r.jumped ? '*' : ' ', r.slot, table.at(r.slot).name, cell(abs_max(r.a)),
                       cell(abs_max(r.b)), cell(r.growth), cell(r.a[kHealthMean]),
                       cell(r.b[kHealthMean]), r.a[kHealthNonfinite], r.b[kHealthNonfinite]);
  return out;
}

ElementwiseChange compare_elementwise(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    throw UsageError(
        fmt::format("the two buffers differ in size ({} and {} elements)", a.size(), b.size()));
  ElementwiseChange c;
  c.count = a.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto at = static_cast<std::int64_t>(i);
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      ++c.differing;
      if (c.first_index < 0) c.first_index = at;
    }
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    if (fa != fb) ++c.finiteness_changed;
    if (!fa || !fb) continue;
    const double d = std::fabs(static_cast<double>(b[i]) - static_cast<double>(a[i]));
    if (d > c.max_abs) {
      c.max_abs = d;
      c.max_abs_index = at;
    }
    if (a[i] != 0.0f) {
      const double r = d / std::fabs(static_cast<double>(a[i]));
      if (r > c.max_rel) {
        c.max_rel = r;
        c.max_rel_index = at;
      }
    }
  }
  return c;
}

std::string elementwise_text(const ElementwiseChange& c) {
  if (c.differing == 0) return fmt::format("all {} elements equal, bit for bit", c.count);
  std::string t = fmt::format("{} of {} elements differ, the first at [{}]", c.differing, c.count,
                              c.first_index);
  if (c.max_abs_index >= 0)
    t += fmt::format("; largest change {:.4g} at [{}]", c.max_abs, c.max_abs_index);
  if (c.max_rel_index >= 0)
    t += fmt::format("; largest relative change {:.4g} at [{}]", c.max_rel, c.max_rel_index);
  if (c.finiteness_changed > 0)
    t += fmt::format("; {} finite at one step only", c.finiteness_changed);
  return t;
}

}  // namespace nanscope
