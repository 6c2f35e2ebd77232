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

std::optional<HealthSeriesKey> parse_health_series(const QString& text, QString* error) {
  const QStringList parts = text.split(':');
  auto fail = [&](const QString& why) {
    if (error) *error = QString("health series '%1': %2").arg(text, why);
    return std::nullopt;
  };
  if (parts.size() != 2) return fail("expected SLOT:MEASURE, e.g. h_s2:absmax");
  const std::optional<int> slot = shown_table().find(parts[0].toStdString());
  if (!slot) return fail(QString("no slot named '%1'").arg(parts[0]));
  for (std::size_t m = 0; m < kHealthMeasureNames.size(); ++m)
    if (parts[1] == measure_name(static_cast<HealthMeasure>(m)))
      return HealthSeriesKey{*slot, static_cast<HealthMeasure>(m)};
  QStringList names;
  for (std::size_t m = 0; m < kHealthMeasureNames.size(); ++m)
    names << measure_name(static_cast<HealthMeasure>(m));
  return fail(QString("no measure '%1' (one of %2)").arg(parts[1], names.join(", ")));
}

}  // namespace nanscope::gui
