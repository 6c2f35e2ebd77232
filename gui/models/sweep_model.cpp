#include "models/sweep_model.h"

#include <QColor>
#include <algorithm>
#include <filesystem>
#include <map>

#include "core/slot_table.h"
#include "style/cell_palette.h"

namespace nanscope::gui {

namespace {
QString slot_name(int slot) {
  return QString::fromUtf8(builtin_slot(slot).name.data());
}
}  // namespace

void SweepModel::setStatus(SweepStatusPtr s) {
  beginResetModel();
  status_ = std::move(s);
  endResetModel();
}

int SweepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !status_ ? 0 : static_cast<int>(status_->tasks.size());
}

int SweepModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || !status_ ? 0 : FoldColumns + status_->folds;
}

int SweepModel::cellCode(const FoldOutcome& f) {
  switch (f.cell) {
    case FoldCell::Clean:
      return kCellClean;
    case FoldCell::Warned:
      return kCellWarned;
    case FoldCell::Fired:
      return f.kinds == 1   ? kCellNaN
             : f.kinds == 2 ? kCellPosInf
             : f.kinds == 4 ? kCellNegInf
                            : kCellMixed;
    case FoldCell::Failed:
      return kCellDisabled;
    case FoldCell::Running:
      return kCellDeferred;
    case FoldCell::NotStarted:
      break;
  }
  return kCellNotRun;
}

QVariant SweepModel::data(const QModelIndex& index, int role) const {
  if (!status_ || !index.isValid()) return {};
  const TaskStatus& t = status_->tasks[static_cast<std::size_t>(index.row())];
  const int c = index.column();
  if (role == RunFileRole)
    return QString::fromStdString((std::filesystem::path(t.dir) / "run" / "run.h5").string());
  if (c >= FoldColumns) {
    const FoldOutcome& f = t.folds[static_cast<std::size_t>(c - FoldColumns)];
    const int code = cellCode(f);
    switch (role) {
      case Qt::BackgroundRole:
        return cell_color(code);
      case Qt::ForegroundRole:
        return cell_ink(code);
      case CellRole:
        return QString::fromStdString(fold_cell_name(f.cell));
      case Qt::DisplayRole:
        return f.cell == FoldCell::Fired     ? slot_name(f.entry_slot)
               : f.cell == FoldCell::Running ? QString("running")
               : f.cell == FoldCell::Failed  ? QString("failed")
                                             : QString();
      case Qt::ToolTipRole:
        return f.cell == FoldCell::Fired
                   ? QString("%1, fold %2: entry %3 %4 at step %5")
                         .arg(QString::fromStdString(t.task.name))
                         .arg(c - FoldColumns)
                         .arg(f.entry_slot)
                         .arg(slot_name(f.entry_slot))
                         .arg(f.entry_step)
                   : QString("%1, fold %2: %3")
                         .arg(QString::fromStdString(t.task.name))
                         .arg(c - FoldColumns)
                         .arg(QString::fromStdString(fold_cell_name(f.cell)).replace('_', ' '));
      default:
        return {};
    }
  }
  if (role == SortRole) {
    switch (c) {
      case FirstFire: {  // the earliest fire first; tasks without one after, the worst first
        if (t.entry) return static_cast<qlonglong>(t.entry->fold) * 1'000'000'000 + t.entry->step;
        const int after = t.state == TaskState::Failed       ? 0
                          : t.outcome == TaskOutcome::Warned ? 1
                          : t.state == TaskState::Running    ? 2
                          : t.state == TaskState::Pending    ? 3
                                                             : 4;  // clean
        return std::numeric_limits<qlonglong>::max() - 4 + after;
      }
      case Seed:
        return static_cast<qulonglong>(t.task.seed);
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::ToolTipRole && c == State && !t.reason.empty())
    return QString::fromStdString(t.reason);
  if (role != Qt::DisplayRole) return {};
  switch (c) {
    case Task:
      return QString::fromStdString(t.task.name);
    case Variant:
      return QString::fromStdString(t.variant);
    case Seed:
      return QString::number(t.task.seed);
    case State:
      return t.state == TaskState::Done ? QString::fromStdString(outcome_name(t.outcome))
                                        : QString::fromStdString(task_state_name(t.state));
    case Note:  // why a task failed or waits, as its status or Slurm says
      return QString::fromStdString(t.reason);
    case FirstFire:
      return t.entry ? QString("%1 (fold %2, step %3)")
                           .arg(slot_name(t.entry->slot))
                           .arg(t.entry->fold)
                           .arg(t.entry->step)
                     : QString("-");
    default:
      return {};
  }
}

QVariant SweepModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const names[] = {"task", "variant", "seed", "state", "first fire", "note"};
  if (section < FoldColumns) return QString(names[section]);
  return QString("fold %1").arg(section - FoldColumns);
}

std::vector<std::pair<int, int>> SweepModel::firstFiringSlots() const {
  std::map<int, int> count;
  if (status_)
    for (const TaskStatus& t : status_->tasks)
      if (t.entry) ++count[t.entry->slot];
  std::vector<std::pair<int, int>> out(count.begin(), count.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace nanscope::gui
