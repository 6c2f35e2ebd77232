// Slot health as plottable series (docs/gui.md, "Metrics"): one slot's health field against the
// step, beside the losses. A series is named "SLOT:MEASURE" (h_s2:absmax), on the command line,
// in view files and in the metrics' CSV header alike.
#pragma once

#include <QString>
#include <array>
#include <optional>
#include <string_view>

#include "core/slot_health.h"

namespace nanscope::gui {

// What of a health row a series plots: the finite |max| (the magnitude view's number), or one of
// the row's fields.
enum class HealthMeasure {
  AbsMax,
  Rms,
  Mean,
  Nonfinite,
  ZeroFraction,
  OverflowMargin,
  UnderflowShare,
  DynamicRange
};
inline constexpr std::array<std::string_view, 8> kHealthMeasureNames = {
    "absmax",          "rms",          "mean", "nonfinite", "zero_fraction", "overflow_margin",
    "underflow_share", "dynamic_range"};

struct HealthSeriesKey {
  int slot = 0;
  HealthMeasure measure = HealthMeasure::AbsMax;
  bool operator==(const HealthSeriesKey&) const = default;
};

// The measure's value in a row: NaN where the slot was not checked (or has nothing finite).
double health_value(const HealthRow& row, HealthMeasure m);
QString measure_name(HealthMeasure m);
// "h_s2:absmax".
QString health_series_name(const HealthSeriesKey& k);
// Parses "SLOT:MEASURE" (slot by name or index, of the shown table; the measure after the last
// ':'); nullopt with `error` saying what is wrong.
std::optional<HealthSeriesKey> parse_health_series(const QString& text, QString* error);
// What is wrong with the text's form or measure, before any table is known ("" when nothing).
QString health_series_form_error(const QString& text);

}  // namespace nanscope::gui
