#include "models/offline.h"

#include <QFileInfo>

#include "io/dump_file.h"
#include "io/run_file.h"

namespace nanscope::gui {

SnapshotPtr load_run_snapshot(const QString& run_file) {
  const RunFileData r = read_run_file(run_file.toStdString());
  auto snap = std::make_shared<Snapshot>();
  snap->offline = true;
  snap->source = run_file;
  snap->run_file = run_file;
  snap->backend = QString::fromStdString(r.backend);
  snap->device = QString::fromStdString(r.device_name);
  snap->config_toml = QString::fromStdString(r.config_toml);
  snap->folds = r.folds;
  snap->finished = true;
  for (auto& s : snap->setup) s = SlotState::Clean;
  if (!r.folds.empty())
    for (int i = 0; i < kSlotCount; ++i) {
      const SlotState st = r.folds.front().slots[i].state;
      if (st == SlotState::Absent || st == SlotState::Deferred || st == SlotState::Disabled) snap->setup[i] = st;
    }
  for (const auto& row : r.steps) {
    snap->step_flags.push_back(row.flags);
    snap->step_fold.push_back(row.fold);
    snap->step_in_fold.push_back(row.step);
    snap->loss.push_back(row.loss);
    snap->grad_norm.push_back(row.grad_norm);
    snap->c51.push_back(row.c51);
  }
  snap->global_step = static_cast<std::int64_t>(r.steps.size());
  if (!r.steps.empty()) {
    snap->fold = r.steps.back().fold;
    snap->step = r.steps.back().step + 1;
  }
  const QString dir = QFileInfo(run_file).absolutePath();
  for (const auto& e : r.events) {
    SnapshotEvent ev{e.fold, e.step, QString::fromStdString(e.kind), e.entry_slot,
                     e.dump.empty() ? QString() : dir + "/" + QString::fromStdString(e.dump)};
    snap->events.push_back(ev);
    if (e.kind != "first_fire") snap->halt = ev;
  }
  // Entry points as the session reports them: the first fold that has one.
  for (std::size_t k = 0; k < r.folds.size(); ++k) {
    const FoldFlags& f = r.folds[k];
    if (!snap->entry && f.entry_slot)
      snap->entry = SnapshotEntry{*f.entry_slot, static_cast<int>(k), *f.entry_step};
    if (!snap->backward_entry && f.backward_entry)
      snap->backward_entry = SnapshotEntry{f.backward_entry->slot, static_cast<int>(k), f.backward_entry->step};
  }
  snap->folds_total = static_cast<int>(r.folds.size());
  return snap;
}

BufferStatsPtr load_dump_stats(const QString& dump_file, int slot) {
  const DumpData d = read_dump(dump_file.toStdString());
  for (const DumpSlot& s : d.slots) {
    if (slot >= 0 && s.index != slot) continue;
    std::vector<std::int64_t> shape(s.shape.begin(), s.shape.end());
    return std::make_shared<const BufferStats>(compute_stats(
        s.index, shape, s.values.data(), s.values.size(),
        QString("dump %1 (fold %2, step %3)").arg(QFileInfo(dump_file).fileName()).arg(d.fold).arg(d.step)));
  }
  BufferStats none;
  none.slot = slot;
  none.origin = dump_file;
  return std::make_shared<const BufferStats>(none);
}

}  // namespace nanscope::gui
