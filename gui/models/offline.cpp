#include "models/offline.h"

#include <QFileInfo>

#include "core/config_io.h"
#include "core/errors.h"
#include "io/dump_file.h"
#include "io/run_file.h"

namespace nanscope::gui {

UpdatePtr load_run_update(const QString& run_file) {
  const RunFileData r = read_run_file(run_file.toStdString());
  auto u = std::make_shared<SnapshotUpdate>();
  u->reset = true;
  SnapshotHead& h = u->head;
  h.offline = true;
  h.source = QFileInfo(run_file).absoluteFilePath();
  h.run_file = h.source;
  h.backend = QString::fromStdString(r.backend);
  h.backend_kind = parse_enum<BackendKind>(r.backend).value_or(BackendKind::Cpu);
  h.device = QString::fromStdString(r.device_name);
  h.config_toml = QString::fromStdString(r.config_toml);
  h.scenario = r.scenario.empty() ? QString("(not recorded)") : QString::fromStdString(r.scenario);
  h.table = r.table;
  if (!r.table->is_builtin()) h.trainer = QString::fromStdString(r.table->trainer());
  h.finished = true;
  try {  // the recorded injections, for the status and the state file
    ConfigBuilder b;
    b.load_text(r.config_toml, "run file config");
    const Config c = b.build();
    h.injections = c.inject.faults;
    h.builtin_type = QString::fromUtf8(name_of(c.model.precision).data(),
                                       static_cast<qsizetype>(name_of(c.model.precision).size()));
    h.folds_total = c.run.folds;
    h.steps_per_fold = c.run.steps_per_fold;
  } catch (const Error&) {
    h.folds_total = static_cast<int>(r.folds.size());
  }
  h.setup.assign(static_cast<std::size_t>(r.table->size()), SlotState::Clean);
  if (!r.folds.empty())
    for (std::size_t i = 0; i < h.setup.size() && i < r.folds.front().slots.size(); ++i) {
      const SlotState st = r.folds.front().slots[i].state;
      if (st == SlotState::Absent || st == SlotState::Deferred || st == SlotState::Disabled)
        h.setup[i] = st;
    }
  for (const auto& row : r.steps) {
    u->steps.push_back(StepRow{row.fold, row.step, row.flags, row.checked, row.losses});
    u->health.push_back(row.health);
  }
  u->folds = r.folds;
  h.global_step = static_cast<std::int64_t>(r.steps.size());
  if (!r.steps.empty()) {
    h.fold = r.steps.back().fold;
    h.step = r.steps.back().step;
  }
  const QString dir = QFileInfo(run_file).absolutePath();
  for (const auto& e : r.events) {
    SnapshotEvent ev{e.fold,
                     e.step,
                     e.kind,
                     e.entry_slot,
                     e.dump.empty() ? QString() : dir + "/" + QString::fromStdString(e.dump),
                     e.watch};
    u->events.push_back(ev);
    if (stops_the_run(e.kind)) h.halt = ev;
  }
  // Entry points as the session reports them (the first fold that has one).
  auto fold = [&](std::size_t k) -> const FoldFlags& { return r.folds[k]; };
  h.entry = run_entry(r.folds.size(), fold);
  h.backward_entry = run_backward_entry(r.folds.size(), fold);
  return u;
}

BufferStatsPtr load_dump_stats(const QString& dump_file, int slot) {
  const DumpData d = read_dump(dump_file.toStdString());
  const DumpSlot* pick = nullptr;
  for (const DumpSlot& s : d.slots)
    if (s.index == slot) pick = &s;
  for (const DumpSlot& s : d.slots)
    if (!pick && s.index == d.entry_slot) pick = &s;
  if (!pick && !d.slots.empty()) pick = &d.slots.front();
  BufferStats st;
  if (pick) {
    std::vector<std::int64_t> shape(pick->shape.begin(), pick->shape.end());
    st = compute_stats(pick->index, shape, pick->values.data(), pick->values.size(),
                       QString("dump %1 (fold %2, step %3)")
                           .arg(QFileInfo(dump_file).fileName())
                           .arg(d.fold)
                           .arg(d.step));
  } else {
    st.slot = slot;
    st.origin = dump_file;
  }
  st.source = BufferStats::Source::Dump;
  if (d.table->contains(st.slot)) st.slot_name = QString::fromStdString(d.table->at(st.slot).name);
  st.path = QFileInfo(dump_file).absoluteFilePath();
  st.fold = d.fold;
  st.step = d.step;
  return std::make_shared<const BufferStats>(std::move(st));
}

}  // namespace nanscope::gui
