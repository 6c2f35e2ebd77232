#include "models/slot_grid_model.h"

#include <QStringList>

#include "models/slot_label.h"

namespace nanscope::gui {

int cell_code(SlotState state, std::uint8_t kinds) {
  switch (state) {
    case SlotState::Absent:
      return kCellAbsent;
    case SlotState::Deferred:
      return kCellDeferred;
    case SlotState::Disabled:
      return kCellDisabled;
    default:
      break;
  }
  if (kinds == 0) return kCellClean;
  if (kinds == kKindNaN) return kCellNaN;
  if (kinds == kKindPosInf) return kCellPosInf;
  if (kinds == kKindNegInf) return kCellNegInf;
  return kCellMixed;
}

QString cell_text(int code) {
  static const char* names[] = {"clean",  "NaN",    "+Inf",     "-Inf",     "mixed",
                                "warned", "absent", "deferred", "disabled", "not run"};
  return code >= 0 && code < kCellCodeCount ? names[code] : "?";
}

QString kinds_text(std::uint8_t kinds) {
  QStringList k;
  if (kinds & kKindNaN) k << "NaN";
  if (kinds & kKindPosInf) k << "+Inf";
  if (kinds & kKindNegInf) k << "-Inf";
  return k.isEmpty() ? QString("none") : k.join(", ");
}

void SlotGridModel::setView(const Snapshot* view) {
  beginResetModel();
  view_ = view;
  columns_ = wantedColumns();
  collectWarned(true);
  endResetModel();
}

// The watch trips of the picture's events, as slot masks per column: the fold a trip happened in
// (fold grid) or its step (step grid of its fold). An appending update folds in only its new
// events, so a refresh costs what the update brought, not what the run holds.
void SlotGridModel::collectWarned(bool from_scratch) {
  if (from_scratch || !view_ || view_->events.size() < warned_events_) {
    warned_.assign(static_cast<std::size_t>(columns_), SlotSet());
    warned_events_ = 0;
  } else {
    warned_.resize(static_cast<std::size_t>(columns_));
  }
  if (!view_) return;
  for (; warned_events_ < view_->events.size(); ++warned_events_) {
    const SnapshotEvent& e = view_->events[warned_events_];
    if (e.kind != EventKind::Watch || e.entry_slot < 0 || e.entry_slot >= shown_slot_count())
      continue;
    const int column = mode_ == Folds ? e.fold : (e.fold == fold_ ? e.step : -1);
    if (column >= 0 && column < columns_) {
      SlotSet& w = warned_[static_cast<std::size_t>(column)];
      if (w.size() == 0) w = SlotSet(shown_slot_count());
      w.set(e.entry_slot);
    }
  }
}

bool SlotGridModel::warned(int column, int slot) const {
  return column >= 0 && static_cast<std::size_t>(column) < warned_.size() &&
         warned_[static_cast<std::size_t>(column)].test(slot);
}

int SlotGridModel::wantedColumns() {
  if (!view_) return 0;
  if (mode_ == Folds) return static_cast<int>(view_->folds.size());
  const auto [begin, end] = view_->fold_steps(fold_);
  first_ = begin;
  return static_cast<int>(end - begin);
}

// Appending updates add columns (and change the last ones); a replaced picture resets.
void SlotGridModel::refresh(bool reset) {
  const int want = wantedColumns();
  if (reset || want < columns_ || rows_for_ != shown_table_generation()) {
    beginResetModel();
    rows_for_ = shown_table_generation();
    columns_ = want;
    collectWarned(true);
    endResetModel();
    return;
  }
  const int before = columns_;
  if (want > before) {
    beginInsertColumns({}, before, want - 1);
    columns_ = want;
    endInsertColumns();
  }
  collectWarned(false);
  // The fold grid's last fold keeps changing, and so may the step grid's cells' check states.
  const int from = mode_ == Folds ? std::max(0, before - 1) : std::max(0, before - 1);
  if (columns_ > 0 && from < columns_)
    Q_EMIT dataChanged(index(0, from), index(shown_slot_count() - 1, columns_ - 1));
}

void SlotGridModel::setFold(int fold) {
  beginResetModel();
  fold_ = fold;
  columns_ = wantedColumns();
  collectWarned(true);
  endResetModel();
}

int SlotGridModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : shown_slot_count();
}
int SlotGridModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : columns_;
}

int SlotGridModel::code(int row, int column) const {
  if (!view_ || row < 0 || row >= shown_slot_count() || column < 0 || column >= columns_)
    return kCellNotRun;
  const int slot = slotOfRow(row);
  if (mode_ == Folds) {
    const std::vector<SlotRecord>& records = view_->folds[static_cast<std::size_t>(column)].slots;
    if (static_cast<std::size_t>(slot) >= records.size()) return kCellNotRun;
    const SlotRecord& r = records[static_cast<std::size_t>(slot)];
    const int c = cell_code(r.state, r.kinds);
    return c == kCellClean && warned(column, slot) ? kCellWarned : c;
  }
  const StepRow& s = view_->steps[first_ + static_cast<std::size_t>(column)];
  if (!s.checked.test(slot)) {
    // Not checked at that step: still off now (absent, deferred, disabled), or turned on since.
    const SlotState now = view_->setup[slot];
    return cell_code(now == SlotState::Clean ? SlotState::Disabled : now, 0);
  }
  const int c = cell_code(SlotState::Clean, static_cast<std::size_t>(slot) < s.flags.size()
                                                ? s.flags[static_cast<std::size_t>(slot)]
                                                : 0);
  return c == kCellClean && warned(column, slot) ? kCellWarned : c;
}

namespace {
std::uint8_t kinds_of_code(int code) {
  switch (code) {
    case kCellNaN:
      return kKindNaN;
    case kCellPosInf:
      return kKindPosInf;
    case kCellNegInf:
      return kKindNegInf;
    case kCellMixed:
      return kKindNaN | kKindPosInf | kKindNegInf;
    default:
      return 0;
  }
}
}  // namespace

void SlotGridModel::pooledCodes(int first, int last, int bins, std::vector<int>& out) const {
  const int n = shown_slot_count();
  const auto width_n = static_cast<std::size_t>(n);
  out.assign(static_cast<std::size_t>(bins) * width_n, kCellNotRun);
  if (!view_ || bins <= 0 || last < first) return;
  const double width = static_cast<double>(last - first + 1) / bins;
  std::vector<std::uint8_t> kinds(width_n), by_slot(width_n);
  std::vector<bool> clean(width_n), warn(width_n);
  for (int b = 0; b < bins; ++b) {
    const int c0 = first + static_cast<int>(b * width);
    const int c1 = std::min(last, std::max(c0, first + static_cast<int>((b + 1) * width) - 1));
    std::fill(kinds.begin(), kinds.end(), 0);
    std::fill(clean.begin(), clean.end(), false);
    std::fill(warn.begin(), warn.end(), false);
    if (mode_ == Steps) {  // straight from the rows, by slot index (the grid's biggest case)
      std::fill(by_slot.begin(), by_slot.end(), 0);
      SlotSet any_checked(n), any_warned(n);
      for (int c = c0; c <= c1; ++c) any_warned |= warned_[static_cast<std::size_t>(c)];
      for (int c = c0; c <= c1; ++c) {
        const StepRow& s = view_->steps[first_ + static_cast<std::size_t>(c)];
        any_checked |= s.checked;
        // A step's own flags are a check's: a slot not checked there has none.
        for (std::size_t i = 0; i < width_n && i < s.flags.size(); ++i)
          if (s.flags[i] && s.checked.test(static_cast<int>(i))) by_slot[i] |= s.flags[i];
      }
      for (int r = 0; r < n; ++r) {
        const int slot = slotOfRow(r);
        kinds[static_cast<std::size_t>(r)] = by_slot[static_cast<std::size_t>(slot)];
        clean[static_cast<std::size_t>(r)] = any_checked.test(slot);
        warn[static_cast<std::size_t>(r)] = any_warned.test(slot);
      }
    } else {
      for (int c = c0; c <= c1; ++c)
        for (int r = 0; r < n; ++r) {
          const int code = this->code(r, c);
          clean[static_cast<std::size_t>(r)] =
              clean[static_cast<std::size_t>(r)] || code <= kCellWarned;
          warn[static_cast<std::size_t>(r)] =
              warn[static_cast<std::size_t>(r)] || code == kCellWarned;
          kinds[static_cast<std::size_t>(r)] |= kinds_of_code(code);
        }
    }
    for (int r = 0; r < n; ++r) {
      int& cell = out[static_cast<std::size_t>(b) * width_n + static_cast<std::size_t>(r)];
      const std::uint8_t k = kinds[static_cast<std::size_t>(r)];
      if (k)
        cell = cell_code(SlotState::Clean, k);
      else if (warn[static_cast<std::size_t>(r)])
        cell = kCellWarned;
      else if (clean[static_cast<std::size_t>(r)])
        cell = kCellClean;
      else
        cell = code(r, c1);
    }
  }
}

QVariant SlotGridModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !view_) return {};
  const int slot = slotOfRow(index.row());
  const int c = code(index.row(), index.column());
  if (role == CodeRole) return c;
  if (role == SlotRole) return slot;
  if (role == Qt::DisplayRole) return cell_text(c);
  if (role == Qt::ToolTipRole) {
    QString tip =
        QString("slot %1 %2\n").arg(slot).arg(QString::fromUtf8(shown_slot(slot).name.data()));
    if (mode_ == Folds) {
      const SlotRecord& r = view_->folds[static_cast<std::size_t>(index.column())].slots[slot];
      tip += QString("fold %1: %2").arg(index.column()).arg(QString::fromUtf8(state_name(r.state)));
      if (r.first_step >= 0)
        tip += QString("\nkinds %1\nfirst step %2\ncount %3")
                   .arg(kinds_text(r.kinds))
                   .arg(r.first_step)
                   .arg(r.count);
    } else {
      const StepRow& s = view_->steps[first_ + static_cast<std::size_t>(index.column())];
      tip += QString("fold %1, step %2: %3").arg(fold_).arg(s.step).arg(cell_text(c));
      if (s.flags[slot]) tip += QString("\nkinds %1").arg(kinds_text(s.flags[slot]));
    }
    return tip;
  }
  return {};
}

QVariant SlotGridModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) {
    if (section < 0 || section >= shown_slot_count()) return {};
    const int slot = slotOfRow(section);
    return slot_label(slot);
  }
  return mode_ == Folds ? QString("fold %1").arg(section) : QString::number(section);
}

}  // namespace nanscope::gui
