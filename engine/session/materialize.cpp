#include "session/materialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/errors.h"
#include "core/slot_table.h"
#include "core/version.h"
#include "io/dump_file.h"

namespace nanscope {

namespace {

// The run's config for recomputing it: the same model, data, injections and checks; no halts (a
// halt stops a run, it changes nothing in it) and no checkpoints of its own.
Config recomputing(Config c) {
  c.halt.on_fire = HaltOnFire::Never;
  c.halt.on_watch = false;
  c.halt.collapse_patience = 0;
  c.history.checkpoint_every = 0;
  c.history.in_run_file = false;
  return c;
}

std::size_t state_size(const ParamLayout& layout) {
  std::size_t n = 0;
  for (const ParamEntry* e : layout.existing()) n += e->count;
  return n;
}

void check_fits(const Checkpoint& c, const ParamLayout& layout) {
  const std::size_t n = state_size(layout);
  const StateSnapshot& s = c.state;
  if (s.params.size() != n || s.target.size() != n || s.adam_m.size() != n || s.adam_v.size() != n)
    throw DataError(fmt::format(
        "the checkpoint at fold {} step {} holds {} parameters; the run's config makes {}", c.fold,
        c.step, s.params.size(), n));
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

Materializer::Materializer(const Config& run_config, const BackendFactory& make_backend, bool graph)
    : config_(recomputing(run_config)) {
  SessionOptions options;
  options.graph = graph;
  session_ = std::make_unique<Session>(config_, make_backend(config_), std::move(options));
}

Materializer::~Materializer() = default;

std::optional<MaterializedStep> Materializer::materialize(
    const Checkpoint& from, const MaterializeRequest& request, const std::function<bool()>& cancel,
    const std::function<void(int, int)>& progress, const std::function<void(Checkpoint&&)>& keep) {
  const auto t0 = std::chrono::steady_clock::now();
  if (request.fold != from.fold || request.step < from.step)
    throw UsageError(
        fmt::format("fold {} step {} cannot be recomputed from the checkpoint at fold {} step {}",
                    request.fold, request.step, from.fold, from.step));
  if (request.step >= config_.run.steps_per_fold)
    throw UsageError(fmt::format("step {} is beyond the fold (run.steps_per_fold = {})",
                                 request.step, config_.run.steps_per_fold));
  Backend& backend = session_->backend();
  check_fits(from, backend.layout());
  for (int s : request.slots)
    if (s < 0 || s >= kBuiltinSlotCount) throw UsageError(fmt::format("no slot {}", s));

  session_->resume_at(from);
  const int before = request.step - from.step;  // steps between the checkpoint and the request
  const int total = before + 1;
  int done = 0;
  auto tick = [&](const StepRecord&) {
    ++done;
    if (progress) progress(done, total);
  };
  // The state before step from.step + steps_done, as a checkpoint for `keep`. Read between pieces,
  // never from the step callback: a bank that reports its outcomes at the piece's end (the CUDA
  // backend's without halts) calls it after the whole piece has run.
  auto keep_state = [&](int steps_done) {
    const int next = from.step + steps_done;
    if (!keep || next >= config_.run.steps_per_fold) return;
    Checkpoint c{from.fold, next, from.global_step + steps_done, {}};
    backend.read_state(c.state);
    keep(std::move(c));
  };
  // Far from the request, one piece; the last kNeighbourStates steps before it one at a time, so
  // that the state before each is kept.
  const int near = keep ? std::min(before, kNeighbourStates) : 0;
  if (before - near > 0 && session_->run_piece(RunUntil{RunUntil::Kind::Steps, before - near, -1},
                                               cancel, tick) == StopReason::Cancelled)
    return std::nullopt;
  for (int k = before - near; k < before; ++k) {
    if (k > 0) keep_state(k);
    if (session_->run_piece(RunUntil{RunUntil::Kind::Steps, 1, -1}, cancel, tick) ==
        StopReason::Cancelled)
      return std::nullopt;
  }
  if (before > 0) keep_state(before);
  if (cancel && cancel()) return std::nullopt;

  MaterializedStep m;
  m.fold = request.fold;
  m.step = request.step;
  m.global_step = from.global_step + before;
  m.checkpoint_step = from.step;
  m.steps_run = total;
  m.backend = backend.name();
  m.backend_kind = backend.kind();
  m.graph = session_->graph();
  backend.read_state(m.context.state);
  // The requested step runs phase by phase (the step graph's bits, promised and tested), so that
  // each slot is taken at its check site, as its check (and a first-fire dump) saw it: slots
  // 33-35 are one buffer at three moments. A slot not checked there is taken after the step.
  std::vector<int> wanted = request.slots;
  if (wanted.empty())
    for (int s = 0; s < kBuiltinSlotCount; ++s) wanted.push_back(s);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::array<std::optional<MaterializedSlot>, kBuiltinSlotCount> seen;
  auto take = [&](int s) {
    const SlotView v = backend.slot(s);
    MaterializedSlot out{s, v.shape, std::vector<float>(v.count)};
    for (std::size_t i = 0; i < v.count; ++i) out.values[i] = static_cast<float>(v.at(i));
    return out;
  };
  session_->set_check_hook([&](int s) {
    if (std::binary_search(wanted.begin(), wanted.end(), s) && !seen[static_cast<std::size_t>(s)])
      seen[static_cast<std::size_t>(s)] = take(s);
  });
  const bool graph = session_->graph();
  session_->set_graph(false);
  try {
    session_->run_piece(RunUntil{RunUntil::Kind::Steps, 1, -1}, {}, tick);
  } catch (...) {
    session_->set_check_hook({});
    session_->set_graph(graph);
    throw;
  }
  session_->set_check_hook({});
  session_->set_graph(graph);
  keep_state(total);  // the state after the requested step: the next cell is one step away
  m.context.batch = backend.batch_context();
  undo_batch_injections(backend.dims(), session_->injected_this_step(), m.context.batch);
  for (int s : wanted) {
    if (!backend.slot(s).exists()) continue;
    m.slots.push_back(seen[static_cast<std::size_t>(s)]
                          ? std::move(*seen[static_cast<std::size_t>(s)])
                          : take(s));
  }
  m.records = session_->history();
  m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

std::optional<std::size_t> latest_checkpoint_row(const RunFileData& run, int fold, int step) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < run.checkpoints.size(); ++i) {
    const Checkpoint& c = run.checkpoints[i];
    if (c.fold == fold && c.step <= step && (!best || c.step > run.checkpoints[*best].step))
      best = i;
  }
  return best;
}

Checkpoint file_checkpoint_for(const RunFileData& run, const std::string& path, int fold,
                               int step) {
  if (run.checkpoints.empty())
    throw DataError(fmt::format(
        "{}: the run file holds no checkpoints, so its steps cannot be recomputed; record them "
        "with --set history.in_run_file=true (history.checkpoint_every > 0, the default 100)",
        path));
  const std::optional<std::size_t> row = latest_checkpoint_row(run, fold, step);
  if (!row)
    throw DataError(fmt::format(
        "{}: no checkpoint of fold {} at or before step {} (the ring of history.memory_mb kept "
        "{} checkpoints; the oldest went first)",
        path, fold, step, run.checkpoints.size()));
  return read_run_checkpoint(path, *row);
}

DumpData materialized_dump(const MaterializedStep& m, const Config& run_config,
                           const std::string& run_config_toml, const ParamLayout& layout,
                           const std::string& run_file) {
  DumpData d;
  d.fold = m.fold;
  d.step = m.step;
  d.global_step = m.global_step;
  d.config_toml = run_config_toml;
  d.backend = m.backend;
  d.nanscope_version = kVersion;
  d.run_file = run_file;
  d.seed = run_config.run.seed;
  d.context_f64 =
      run_config.model.precision == Precision::Float64 && m.backend_kind == BackendKind::Cpu;
  d.origin = "materialized";
  d.checkpoint_step = m.checkpoint_step;
  const SlotSet checked = m.records.empty() ? SlotSet() : m.records.back().checked;
  d.flags = m.records.empty() ? StepFlags(kBuiltinSlotCount) : m.records.back().flags;
  // The entry of the dump is the step's, whichever slots it holds: the lowest-rank slot whose
  // check fired at this step (a dump of one downstream slot still names where the NaN entered).
  for (std::size_t i = 0; i < d.flags.size(); ++i) {
    const int slot = static_cast<int>(i);
    if (d.flags[i] && checked.test(slot) &&
        (d.entry_slot < 0 || builtin_slot(slot).rank < builtin_slot(d.entry_slot).rank))
      d.entry_slot = slot;
  }
  // Each slot's counts are its buffer's; its flags are the check's, so a slot not checked at this
  // step (deferred, disabled) has none, as in a first fire's dump, and replay's verdict reads the
  // same.
  for (const MaterializedSlot& s : m.slots) {
    DumpSlot out{s.index,
                 std::vector<std::uint64_t>(s.shape.begin(), s.shape.end()),
                 s.values,
                 scan_nonfinite(s.values.data(), s.values.size()),
                 {}};
    if (!checked.test(s.index)) out.scan.kinds = 0;
    d.slots.push_back(std::move(out));
  }
  d.state = m.context.state;
  d.batch = m.context.batch;
  for (const ParamEntry* e : layout.existing()) {
    d.param_names.push_back(e->name);
    d.param_shapes.emplace_back(e->shape.begin(), e->shape.end());
  }
  return d;
}

RunAgreement agreement_with_run(const MaterializedStep& m, const RunFileData& run,
                                const std::string& run_dir) {
  RunAgreement a;
  for (const StepRecord& rec : m.records) {
    auto row = std::find_if(run.steps.begin(), run.steps.end(), [&](const RunStepRow& r) {
      return r.fold == rec.fold && r.step == rec.step;
    });
    // A step whose health the run file did not keep (docs/files.md, "What the run file keeps")
    // has nothing to compare against.
    if (row == run.steps.end() || row->health.empty()) continue;
    ++a.steps_compared;
    // The slots the file stores (a slot added after it was written has no row there).
    const std::size_t stored =
        std::min(rec.health.size(), static_cast<std::size_t>(run.stored_slots));
    // The fields the file stores (an older file holds fewer).
    const std::size_t fields = std::min(static_cast<std::size_t>(kHealthFieldCount),
                                        static_cast<std::size_t>(run.health_fields));
    for (std::size_t s = 0; s < stored; ++s)
      for (std::size_t k = 0; k < fields; ++k) {
        const HealthRow& kept = health_at(row->health, static_cast<int>(s));
        const float x = rec.health[s][k], y = kept[k];
        if (same_bits(x, y) || (std::isnan(x) && std::isnan(y))) continue;
        a.health_bit_equal = false;
        // A mean near zero is a cancellation whose rounding is relative to the values' size:
        // it is measured against the slot's rms.
        const double size = k == kHealthMean ? std::fabs(double(kept[kHealthRms])) : 0;
        const double scale = std::max(
            {std::fabs(double(x)), std::fabs(double(y)), std::isfinite(size) ? size : 0, 1e-30});
        const double rel = std::fabs(double(x) - double(y)) / scale;
        if (std::isfinite(rel)) a.health_max_rel = std::max(a.health_max_rel, rel);
      }
  }
  for (const RunEventRow& e : run.events) {
    if (e.kind != EventKind::FirstFire || e.fold != m.fold || e.step != m.step || e.dump.empty())
      continue;
    const std::string path = (std::filesystem::path(run_dir) / e.dump).string();
    if (!std::filesystem::exists(path)) continue;
    const DumpData d = read_dump(path);
    a.dump = path;
    for (const DumpSlot& ds : d.slots) {
      auto got = std::find_if(m.slots.begin(), m.slots.end(),
                              [&](const MaterializedSlot& s) { return s.index == ds.index; });
      if (got == m.slots.end() || got->values.size() != ds.values.size()) continue;
      ++a.dump_slots;
      for (std::size_t i = 0; i < ds.values.size(); ++i) {
        const float x = got->values[i], y = ds.values[i];
        if (!same_bits(x, y)) a.dump_bit_equal = false;
        if (std::isfinite(x) && std::isfinite(y))
          a.dump_max_abs = std::max(a.dump_max_abs, std::fabs(double(x) - double(y)));
      }
    }
    break;
  }
  return a;
}

}  // namespace nanscope
