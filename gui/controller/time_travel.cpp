#include "controller/time_travel.h"

#include <fmt/format.h>
#include <QDateTime>
#include <QFileInfo>
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/slot_table.h"

namespace nanscope::gui {

namespace {

BufferStats none_because(const TravelRequest& r, const QString& why) {
  return cell_without_buffer(r.slot, r.fold, r.step, BufferStats::Source::None, r.generation, why);
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
  near_.clear();
  near_key_.clear();
}

void TimeTravel::keepNear(Checkpoint&& c, int fold, int step) {
  for (Checkpoint& k : near_)
    if (k.fold == c.fold && k.step == c.step) {
      k = std::move(c);
      return;
    }
  near_.push_back(std::move(c));
  const auto bytes = [](const Checkpoint& k) {
    const StateSnapshot& s = k.state;
    return (s.params.size() + s.target.size() + s.adam_m.size() + s.adam_v.size()) * sizeof(double);
  };
  std::size_t total = 0;
  for (const Checkpoint& k : near_) total += bytes(k);
  // The farthest from the cell asked for last goes first (another fold is farther than any step).
  const auto distance = [&](const Checkpoint& k) {
    return k.fold != fold ? std::numeric_limits<int>::max() : std::abs(k.step - step);
  };
  while (total > kNearBytes && near_.size() > 1) {
    const auto far =
        std::max_element(near_.begin(), near_.end(),
                         [&](const auto& a, const auto& b) { return distance(a) < distance(b); });
    total -= bytes(*far);
    near_.erase(far);
  }
}

const Checkpoint* TimeTravel::nearest(int fold, int step, const Checkpoint& from) const {
  const Checkpoint* best = nullptr;
  for (const Checkpoint& k : near_)
    if (k.fold == fold && k.step <= step && k.step > (best ? best->step : from.step)) best = &k;
  return best;
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

// Where a cell is recomputed from: the live run's ring or the run file's /checkpoints.
std::variant<TimeTravel::Start, QString> TimeTravel::start_for(int fold, int step,
                                                               const QString& run_file,
                                                               Session* live) {
  const QString cell = QString("fold %1, step %2").arg(fold).arg(step);
  const auto no_checkpoint = [&](const Config& c) {
    return QString(
               "no buffer of %1 is kept, and there is no checkpoint of fold %2 at or before step "
               "%3 to recompute it from (%4)")
        .arg(cell)
        .arg(fold)
        .arg(step)
        .arg(c.history.checkpoint_every == 0
                 ? QString("history.checkpoint_every = 0 keeps none")
                 : QString("the ring of history.memory_mb = %1 MiB dropped it")
                       .arg(c.history.memory_mb));
  };
  Start s;
  if (run_file.isEmpty()) {
    if (!live || !ran(*live, fold, step)) return QString("%1 has not run yet").arg(cell);
    const auto mark = live->checkpoint_at_or_before(fold, step);
    if (!mark) return no_checkpoint(live->config());
    s.from = live->read_checkpoint(*mark);
    s.config = live->config();
    s.run_backend = live->backend().name();
    s.graph = live->graph();
    return s;
  }
  // The file as it is now: a run rewritten under the same name is read again.
  const QFileInfo info(run_file);
  const QString stamp = QString("%1|%2|%3")
                            .arg(info.absoluteFilePath())
                            .arg(info.lastModified().toMSecsSinceEpoch())
                            .arg(info.size());
  if (file_ != stamp) {
    file_data_ = read_run_file(run_file.toStdString());
    file_ = stamp;
  }
  // Another trainer's run (the SDK): its steps are its own code, never re-run here.
  if (!file_data_.table->is_builtin())
    return QString(
               "no buffer of %1 is kept: a run of trainer %2 keeps the buffers of its first "
               "fires (the fold's first firing step, dumps/); nanscope re-runs the steps of "
               "its own trainer only")
        .arg(cell, QString::fromStdString(file_data_.table->trainer()));
  if (file_data_.checkpoints.empty())
    return QString(
               "no buffer of %1 is kept, and this run file holds no checkpoints to recompute "
               "it from (record them with history.in_run_file = true)")
        .arg(cell);
  const std::optional<std::size_t> row = latest_checkpoint_row(file_data_, fold, step);
  ConfigBuilder b;
  b.load_text(file_data_.config_toml, run_file.toStdString() + " config");
  s.config = b.build();
  if (!row) return no_checkpoint(s.config);
  s.from = read_run_checkpoint(run_file.toStdString(), *row);
  s.run_backend = file_data_.backend;
  s.graph = true;  // the CUDA backend's default; the CPU backend steps phase by phase either way
  return s;
}

BufferStats TimeTravel::travel(const TravelRequest& r, Session* live,
                               const BackendFactory& make_backend,
                               const std::function<void(int, int)>& progress) {
  if (r.generation != newest_.load()) return none_because(r, "superseded");
  auto start = start_for(r.fold, r.step, r.run_file, live);
  if (const QString* why = std::get_if<QString>(&start)) return none_because(r, *why);
  const Start& s = std::get<Start>(start);
  Materializer& m = materializer(s.config, s.run_backend, s.graph, make_backend);
  // The kept states are this run's and this model's only: the live run, or the file as it is now.
  const std::string key =
      materializer_key_ + "|" + (r.run_file.isEmpty() ? std::string("live") : file_.toStdString());
  if (key != near_key_) {
    near_.clear();
    near_key_ = key;
  }
  const Checkpoint* near = nearest(r.fold, r.step, s.from);
  const Checkpoint from = near ? *near : s.from;
  const int generation = r.generation;
  const auto got = m.materialize(
      from, MaterializeRequest{r.fold, r.step, {r.slot}},
      [this, generation] { return newest_.load() != generation; }, progress,
      [&](Checkpoint&& c) { keepNear(std::move(c), r.fold, r.step); });
  if (!got) return none_because(r, "superseded");
  const bool other = parse_enum<BackendKind>(s.run_backend) != got->backend_kind;
  if (got->slots.empty()) {
    BufferStats none = none_because(r, "");
    none.exists = false;
    return none;
  }
  const MaterializedSlot& slot = got->slots.front();
  const QString origin =
      QString(
          "fold %1, step %2: recomputed from the %8 at step %3 (%4 step%5 re-run, "
          "this one included; %6 ms)%7")
          .arg(r.fold)
          .arg(r.step)
          .arg(got->checkpoint_step)
          .arg(got->steps_run)
          .arg(got->steps_run == 1 ? "" : "s")
          .arg(got->ms, 0, 'f', 1)
          .arg(other ? QString(" (on the %1 backend; the run's was %2: float32 rounding may "
                               "differ)")
                           .arg(QString::fromStdString(got->backend),
                                QString::fromStdString(s.run_backend))
                     : QString())
          .arg(near ? "state kept by an earlier recomputation" : "checkpoint");
  BufferStats out =
      compute_stats(r.slot, slot.shape, slot.values.data(), slot.values.size(), origin);
  out.source = BufferStats::Source::Recomputed;
  out.exists = true;
  out.computed = true;
  out.fold = r.fold;
  out.step = r.step;
  out.generation = r.generation;
  out.checkpoint_step = got->checkpoint_step;
  out.steps_run = got->steps_run;
  out.ms = got->ms;
  out.other_backend = other;
  return out;
}

QVariantMap TimeTravel::compare(int slot, int fold, int step_a, int step_b, const QString& run_file,
                                Session* live, const BackendFactory& make_backend) {
  QVariantMap out{{"slot", slot}, {"fold", fold}, {"step_a", step_a}, {"step_b", step_b}};
  std::vector<float> buffer[2];
  for (int k = 0; k < 2; ++k) {
    const int step = k == 0 ? step_a : step_b;
    auto start = start_for(fold, step, run_file, live);
    if (const QString* why = std::get_if<QString>(&start)) {
      out["text"] = *why;
      return out;
    }
    const Start& s = std::get<Start>(start);
    const auto got = materializer(s.config, s.run_backend, s.graph, make_backend)
                         .materialize(s.from, MaterializeRequest{fold, step, {slot}});
    if (!got || got->slots.empty()) {
      out["text"] = QString("slot %1 does not exist in this run").arg(slot);
      return out;
    }
    buffer[k] = got->slots.front().values;
  }
  const ElementwiseChange c = compare_elementwise(buffer[0], buffer[1]);
  out["ok"] = true;
  out["count"] = static_cast<qulonglong>(c.count);
  out["differing"] = static_cast<qlonglong>(c.differing);
  out["first_index"] = static_cast<qlonglong>(c.first_index);
  out["max_abs"] = c.max_abs;
  out["max_abs_index"] = static_cast<qlonglong>(c.max_abs_index);
  out["max_rel"] = c.max_rel;
  out["max_rel_index"] = static_cast<qlonglong>(c.max_rel_index);
  out["finiteness_changed"] = static_cast<qlonglong>(c.finiteness_changed);
  out["text"] = QString("%1 %2, step %3 vs step %4 element by element: %5")
                    .arg(slot)
                    .arg(QString::fromStdString(builtin_slot(slot).name))
                    .arg(step_a)
                    .arg(step_b)
                    .arg(QString::fromStdString(elementwise_text(c)));
  return out;
}

}  // namespace nanscope::gui
