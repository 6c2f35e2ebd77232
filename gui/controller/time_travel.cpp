#include "controller/time_travel.h"

#include <fmt/format.h>

#include "core/config_io.h"
#include "core/errors.h"

namespace nanscope::gui {

namespace {

BufferStats none_because(const TravelRequest& r, const QString& why) {
  BufferStats s;
  s.slot = r.slot;
  s.fold = r.fold;
  s.step = r.step;
  s.exists = true;
  s.computed = false;
  s.source = BufferStats::Source::None;
  s.generation = r.generation;
  s.origin = why;
  return s;
}

bool ran(const Session& s, int fold, int step) {
  for (const StepRecord& h : s.history())
    if (h.fold == fold && h.step == step) return true;
  return false;
}

}  // namespace

void TimeTravel::reset() {
  materializer_.reset();
  materializer_key_.clear();
  file_.clear();
  file_data_ = RunFileData{};
}

Materializer& TimeTravel::materializer(const Config& config, const std::string& backend, bool graph,
                                       const BackendFactory& make_backend) {
  const std::string key = backend + (graph ? ":graph:" : ":steps:") + to_toml(config);
  if (!materializer_ || key != materializer_key_) {
    materializer_.reset();
    materializer_ = std::make_unique<Materializer>(config, make_backend, graph);
    materializer_key_ = key;
  }
  return *materializer_;
}

BufferStats TimeTravel::travel(const TravelRequest& r, Session* live,
                               const BackendFactory& make_backend,
                               const std::function<void(int, int)>& progress) {
  if (r.generation != newest_.load()) return none_because(r, "superseded");
  Config config;
  std::optional<Checkpoint> from;
  std::string run_backend;
  bool graph = false;
  const QString cell = QString("fold %1, step %2").arg(r.fold).arg(r.step);
  const QString no_checkpoint =
      QString(
          "no buffer of %1 is kept and no checkpoint of fold %2 at or before step %3 is "
          "either (history.checkpoint_every = 0, or the ring of history.memory_mb dropped it)")
          .arg(cell)
          .arg(r.fold)
          .arg(r.step);
  if (r.run_file.isEmpty()) {
    if (!live || !ran(*live, r.fold, r.step))
      return none_because(r, QString("%1 has not run yet").arg(cell));
    const auto mark = live->checkpoint_at_or_before(r.fold, r.step);
    if (!mark) return none_because(r, no_checkpoint);
    from = live->read_checkpoint(*mark);
    config = live->config();
    run_backend = live->backend().name();
    graph = live->graph();
  } else {
    if (file_ != r.run_file) {
      file_data_ = read_run_file(r.run_file.toStdString());
      file_ = r.run_file;
    }
    if (file_data_.checkpoints.empty())
      return none_because(
          r, QString("no buffer of %1 is kept, and this run file holds no checkpoints to "
                     "recompute it from (record them with history.in_run_file = true)")
                 .arg(cell));
    std::optional<std::size_t> row;
    for (std::size_t i = 0; i < file_data_.checkpoints.size(); ++i) {
      const Checkpoint& c = file_data_.checkpoints[i];
      if (c.fold == r.fold && c.step <= r.step &&
          (!row || c.step > file_data_.checkpoints[*row].step))
        row = i;
    }
    if (!row) return none_because(r, no_checkpoint);
    from = read_run_checkpoint(r.run_file.toStdString(), *row);
    ConfigBuilder b;
    b.load_text(file_data_.config_toml, r.run_file.toStdString() + " config");
    config = b.build();
    run_backend = file_data_.backend;
    graph = true;  // the CUDA backend's default; the CPU backend steps phase by phase either way
  }
  Materializer& m = materializer(config, run_backend, graph, make_backend);
  const int generation = r.generation;
  const auto got = m.materialize(
      *from, MaterializeRequest{r.fold, r.step, {r.slot}},
      [this, generation] { return newest_.load() != generation; }, progress);
  if (!got) return none_because(r, "superseded");
  const bool other = got->backend != run_backend;
  if (got->slots.empty()) {
    BufferStats s = none_because(r, "");
    s.exists = false;
    return s;
  }
  const MaterializedSlot& slot = got->slots.front();
  const QString origin =
      QString("%1: recomputed from the checkpoint at step %2, %3 step%4, %5 ms%6")
          .arg(cell)
          .arg(got->checkpoint_step)
          .arg(got->steps_run)
          .arg(got->steps_run == 1 ? "" : "s")
          .arg(got->ms, 0, 'f', 1)
          .arg(other ? QString(" (on the %1 backend; the run's was %2: float32 rounding may "
                               "differ)")
                           .arg(QString::fromStdString(got->backend),
                                QString::fromStdString(run_backend))
                     : QString());
  BufferStats s = compute_stats(r.slot, slot.shape, slot.values.data(), slot.values.size(), origin);
  s.source = BufferStats::Source::Recomputed;
  s.exists = true;
  s.computed = true;
  s.fold = r.fold;
  s.step = r.step;
  s.generation = r.generation;
  s.checkpoint_step = got->checkpoint_step;
  s.steps_run = got->steps_run;
  s.ms = got->ms;
  s.other_backend = other;
  return s;
}

}  // namespace nanscope::gui
