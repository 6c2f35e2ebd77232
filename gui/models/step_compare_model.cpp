#include "models/step_compare_model.h"

#include "models/shown_table.h"
#include "models/slot_label.h"
#include "style/cell_palette.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <algorithm>
#include <cmath>

namespace nanscope::gui {

namespace {
const SlotHealthRows* health_of(const Snapshot& view, int fold, int step) {
  const auto [begin, end] = view.fold_steps(fold);
  const std::size_t i = begin + static_cast<std::size_t>(step);
  if (step < 0 || i >= end || i >= view.health.size()) return nullptr;
  return &view.health[i];
}

QString number(double v) {
  if (std::isnan(v)) return QStringLiteral("-");
  return QString::number(v, 'g', 4);
}
}  // namespace

std::optional<DefaultCompareSteps> default_compare_steps(const Snapshot& view, int fold) {
  const auto [begin, end] = view.fold_steps(fold);
  std::vector<bool> fired;
  for (std::size_t i = begin; i < end; ++i) fired.push_back(any_fired(view.steps[i].flags));
  std::optional<int> first_watch;
  for (const SnapshotEvent& e : view.events)
    if (e.kind == EventKind::Watch && e.fold == fold && (!first_watch || e.step < *first_watch))
      first_watch = e.step;
  return nanscope::default_compare_steps(fired, first_watch);
}

std::optional<StepComparison> compare_in_view(const Snapshot& view, int fold, int step_a,
                                              int step_b) {
  const SlotHealthRows* a = health_of(view, fold, step_a);
  const SlotHealthRows* b = health_of(view, fold, step_b);
  if (!a || !b) return std::nullopt;
  return compare_steps(shown_table(), fold, step_a, *a, step_b, *b);
}

QString growth_text(const SlotChange& r) {
  if (std::isnan(r.growth))
    return std::isnan(abs_max(r.b)) ? QStringLiteral("nothing finite") : QStringLiteral("-");
  if (std::isinf(r.growth)) return QStringLiteral("from 0");
  return QString("x%1").arg(r.growth, 0, 'g', 3);
}

void StepCompareModel::setComparison(std::optional<StepComparison> c) {
  beginResetModel();
  c_ = std::move(c);
  endResetModel();
}

std::vector<int> StepCompareModel::jumpedSlots() const {
  std::vector<int> out;
  if (c_)
    for (const SlotChange& r : c_->rows)
      if (r.jumped) out.push_back(r.slot);
  return out;
}

int StepCompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !c_ ? 0 : static_cast<int>(c_->rows.size());
}
int StepCompareModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant StepCompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !c_) return {};
  const SlotChange& r = c_->rows[static_cast<std::size_t>(index.row())];
  if (role == SlotRole) return r.slot;
  if (role == JumpedRole) return r.jumped;
  // Jumped rows: bold on the grid's jump colour, so the table and the grid read together.
  if (role == Qt::BackgroundRole && r.jumped) return QBrush(jump_fill());
  if (role == Qt::FontRole && r.jumped) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole && index.column() != Slot)
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole && r.jumped)
    return QString("jumped: %1 between step %2 and step %3")
        .arg(r.went_nonfinite ? QString("went non-finite")
                              : QString("|max| grew %1x or more").arg(kJumpFactor))
        .arg(c_->step_a)
        .arg(c_->step_b);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Slot:
      return slot_label(r.slot);
    case AbsMaxA:
      return number(abs_max(r.a));
    case AbsMaxB:
      return number(abs_max(r.b));
    case Growth:
      return growth_text(r);
    case MeanA:
      return number(r.a[kHealthMean]);
    case MeanB:
      return number(r.b[kHealthMean]);
    case MeanChange:
      return number(r.mean_change);
    case NonfiniteA:
      return QString::number(static_cast<double>(r.a[kHealthNonfinite]), 'g', 10);
    case NonfiniteB:
      return QString::number(static_cast<double>(r.b[kHealthNonfinite]), 'g', 10);
    default:
      return {};
  }
}

QVariant StepCompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  const QString a = c_ ? QString("step %1").arg(c_->step_a) : QString("A");
  const QString b = c_ ? QString("step %1").arg(c_->step_b) : QString("B");
  switch (section) {
    case Slot:
      return QString("slot");
    case AbsMaxA:
      return QString("|max| %1").arg(a);
    case AbsMaxB:
      return QString("|max| %1").arg(b);
    case Growth:
      return QString("growth");
    case MeanA:
      return QString("mean %1").arg(a);
    case MeanB:
      return QString("mean %1").arg(b);
    case MeanChange:
      return QString("mean change");
    case NonfiniteA:
      return QString("non-finite %1").arg(a);
    case NonfiniteB:
      return QString("non-finite %1").arg(b);
    default:
      return {};
  }
}

}  // namespace nanscope::gui
