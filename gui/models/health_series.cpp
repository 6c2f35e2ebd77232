#include "models/health_series.h"

#include <QStringList>

#include "core/slot_table.h"

namespace nanscope::gui {

double health_value(const HealthRow& row, HealthMeasure m) {
  switch (m) {
    case HealthMeasure::AbsMax:
      return abs_max(row);
    case HealthMeasure::Rms:
      return row[kHealthRms];
    case HealthMeasure::Mean:
      return row[kHealthMean];
    case HealthMeasure::Nonfinite:
      return row[kHealthNonfinite];
    case HealthMeasure::ZeroFraction:
      return row[kHealthZeroFraction];
    case HealthMeasure::OverflowMargin:
      return row[kHealthOverflowMargin];
    case HealthMeasure::UnderflowShare:
      return row[kHealthUnderflowShare];
    case HealthMeasure::DynamicRange:
      return row[kHealthDynamicRange];
  }
  return row[kHealthNonfinite];
}

QString measure_name(HealthMeasure m) {
  const auto n = kHealthMeasureNames[static_cast<std::size_t>(m)];
  return QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()));
}

QString health_series_name(const HealthSeriesKey& k) {
  return QString("%1:%2").arg(QString::fromUtf8(shown_slot(k.slot).name.data()),
                              measure_name(k.measure));
}

namespace {
std::optional<HealthMeasure> measure_named(const QString& name) {
  for (std::size_t m = 0; m < kHealthMeasureNames.size(); ++m)
    if (name == measure_name(static_cast<HealthMeasure>(m))) return static_cast<HealthMeasure>(m);
  return std::nullopt;
}
QString measures_text() {
  QStringList names;
  for (std::size_t m = 0; m < kHealthMeasureNames.size(); ++m)
    names << measure_name(static_cast<HealthMeasure>(m));
  return names.join(", ");
}
}  // namespace

QString health_series_form_error(const QString& text) {
  const qsizetype colon = text.lastIndexOf(':');
  if (colon <= 0)
    return QString("health series '%1': expected SLOT:MEASURE, e.g. h_s2:absmax").arg(text);
  if (!measure_named(text.mid(colon + 1)))
    return QString("health series '%1': no measure '%2' (one of %3)")
        .arg(text, text.mid(colon + 1), measures_text());
  return {};
}

std::optional<HealthSeriesKey> parse_health_series(const QString& text, QString* error) {
  // The measure follows the last ':' (a module path's slot name may hold ':', "grad:head").
  const qsizetype colon = text.lastIndexOf(':');
  const QStringList parts = {text.left(colon), text.mid(colon + 1)};
  auto fail = [&](const QString& why) {
    if (error) *error = QString("health series '%1': %2").arg(text, why);
    return std::nullopt;
  };
  if (colon <= 0) return fail("expected SLOT:MEASURE, e.g. h_s2:absmax");
  const std::optional<int> slot = shown_table().find(parts[0].toStdString());
  if (!slot) return fail(QString("no slot named '%1'").arg(parts[0]));
  if (const auto m = measure_named(parts[1])) return HealthSeriesKey{*slot, *m};
  return fail(QString("no measure '%1' (one of %2)").arg(parts[1], measures_text()));
}

}  // namespace nanscope::gui
