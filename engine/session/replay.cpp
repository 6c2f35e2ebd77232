#include "session/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/sentinel.h"
#include "model/check_bank.h"

namespace nanscope {
namespace {

std::vector<float> floats_of(const SlotView& v) {
  std::vector<float> out(v.count);
  for (std::size_t i = 0; i < v.count; ++i) out[i] = static_cast<float>(v.at(i));
  return out;
}

// Makes the recorded slot injections again and keeps the dumped slots' buffers as their call sites
// see them; the checks, their flags and the guard are the backend bank's, set up as the dumped
// run's config says.
class ReplayObserver final : public SlotObserver {
 public:
  ReplayObserver(Backend& b, const DumpData& dump, std::vector<Injection> inject)
      : backend_(b), inject_(std::move(inject)) {
    for (const DumpSlot& s : dump.slots) kept_[static_cast<std::size_t>(s.index)].emplace();
  }

  void produced(int slot) override {
    for (const Injection& inj : inject_)
      if (inj.slot == slot) backend_.inject_slot(slot, inj.element, inj.value());
  }

  bool overwrites(int slot) override {
    return std::any_of(inject_.begin(), inject_.end(),
                       [&](const Injection& inj) { return inj.slot == slot; });
  }

  bool writes_this_step() override { return !inject_.empty(); }

  void check(int slot) override {
    const auto i = static_cast<std::size_t>(slot);
    if (kept_[i]) *kept_[i] = floats_of(backend_.slot(slot));
  }

  std::array<std::optional<std::vector<float>>, kBuiltinSlotCount> kept_;

 private:
  Backend& backend_;
  std::vector<Injection> inject_;
};

// The dump's parameters in the backend's layout order, matched by name.
StateSnapshot state_for_layout(const DumpData& d, const ParamLayout& layout) {
  std::vector<std::size_t> offsets;
  std::size_t k = 0;
  for (const auto& shape : d.param_shapes) {
    offsets.push_back(k);
    std::size_t n = 1;
    for (auto s : shape) n *= static_cast<std::size_t>(s);
    k += n;
  }
  StateSnapshot out;
  out.adam_t = d.state.adam_t;
  for (const ParamEntry* e : layout.existing()) {
    auto it = std::find(d.param_names.begin(), d.param_names.end(), e->name);
    if (it == d.param_names.end())
      throw DataError(fmt::format("dump: /context/params has no '{}'", e->name));
    const std::size_t p = static_cast<std::size_t>(it - d.param_names.begin());
    const std::vector<std::uint64_t> want(e->shape.begin(), e->shape.end());
    if (d.param_shapes[p] != want)
      throw DataError(fmt::format("dump: '{}' has the wrong shape", e->name));
    const auto from = static_cast<std::ptrdiff_t>(offsets[p]);
    const auto to = from + static_cast<std::ptrdiff_t>(e->count);
    out.params.insert(out.params.end(), d.state.params.begin() + from, d.state.params.begin() + to);
    out.target.insert(out.target.end(), d.state.target.begin() + from, d.state.target.begin() + to);
    out.adam_m.insert(out.adam_m.end(), d.state.adam_m.begin() + from, d.state.adam_m.begin() + to);
    out.adam_v.insert(out.adam_v.end(), d.state.adam_v.begin() + from, d.state.adam_v.begin() + to);
  }
  return out;
}

// The injections recorded in the dump's config for its own fold and step.
std::vector<Injection> recorded_injections(const Config& config, const DumpData& d) {
  std::vector<Injection> out;
  for (const std::string& spec : config.inject.faults) {
    Injection inj;
    try {
      inj = parse_injection(spec);
    } catch (const UsageError& e) {
      throw DataError(fmt::format("dump config: key 'inject.faults': {}", e.what()));
    }
    if (inj.fold == d.fold && inj.step == d.step) out.push_back(inj);
  }
  return out;
}

}  // namespace

BufferMatch compare_buffers(const std::vector<float>& a, const std::vector<float>& b) {
  BufferMatch m;
  if (a.size() != b.size()) {
    m.differing = static_cast<std::int64_t>(std::max(a.size(), b.size()));
    m.rel_error = std::numeric_limits<double>::infinity();
    return m;
  }
  m.same_nonfinite = true;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) ++m.differing;
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    if (fa && fb) {
      diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
      norm += static_cast<double>(a[i]) * a[i];
    } else if (fa != fb || scan_nonfinite(&a[i], 1).kinds != scan_nonfinite(&b[i], 1).kinds) {
      m.same_nonfinite = false;
    }
  }
  m.bit_equal = m.differing == 0;
  m.equal = m.same_nonfinite && m.rel_error == 0 && [&] {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::isfinite(a[i]) && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
    return true;
  }();
  m.rel_error = diff == 0 ? 0 : std::sqrt(diff / std::max(norm, 1e-300));
  return m;
}

bool ReplayResult::slot_injection_recorded() const {
  return std::any_of(injections.begin(), injections.end(),
                     [](const Injection& i) { return i.target == Injection::Target::Slot; });
}

Config dump_config(const DumpData& d) {
  // Another trainer's step is that trainer's code: its dump is read and shown, never re-run here.
  if (!d.table->is_builtin())
    throw DataError(
        fmt::format("{}: a dump of trainer '{}': nanscope replays its own trainer's "
                    "steps only (validate and the workbench read it)",
                    d.path, d.table->trainer()));
  ConfigBuilder b;
  b.load_text(d.config_toml, "dump config");
  return b.build();
}

ReplayResult replay_dump(const DumpData& d, Backend& backend, ReplayOptions options) {
  const Config config = dump_config(d);
  ReplayResult r;
  r.injections = recorded_injections(config, d);
  std::vector<Injection> slot_faults;  // parameter faults are in the dumped parameters already
  if (options.with_injections)
    for (const Injection& inj : r.injections)
      if (inj.target == Injection::Target::Slot) slot_faults.push_back(inj);
  r.injections_replayed = !slot_faults.empty();

  backend.write_state(state_for_layout(d, backend.layout()));
  backend.set_batch(d.batch);
  ReplayObserver obs(backend, d, slot_faults);
  CheckBank& checks = backend.checks();
  const StepKey key{config.run.seed, d.fold, d.step, d.global_step};
  backend.set_observer(&obs);
  StepOutcome outcome;
  try {
    checks.begin_fold(slot_setup(config));
    checks.set_capture(false);
    checks.set_report_each_step(true);
    checks.begin_step(key);
    // The batch and the taus are installed, not sampled: their injections (made right after the
    // sample phase's gather and draws) and the batch's check happen here, on the installed values.
    obs.produced(kBatch);
    if (backend.dims().iqn) obs.produced(kIqnTau);
    checks.check_now(kBatch);
    for (int p = static_cast<int>(Phase::Forward); p < kPhaseCount; ++p)
      backend.run_phase(static_cast<Phase>(p), key);
    outcome = std::move(checks.end_step().back());
  } catch (...) {
    backend.set_observer(nullptr);
    throw;
  }
  backend.set_observer(nullptr);

  r.replayed_flags = outcome.kinds;
  bool all_back = true;
  for (const DumpSlot& s : d.slots) {
    const auto i = static_cast<std::size_t>(s.index);
    ReplaySlot rs{s.index, s.scan.kinds, outcome.kinds[i], {}, {}};
    if (obs.kept_[i]) rs.replayed = std::move(*obs.kept_[i]);
    // A dataset of another size than the step makes is not this run's buffer: no verdict on it.
    if (obs.kept_[i] && s.values.size() != rs.replayed.size())
      throw DataError(fmt::format(
          "{}:/slots/{}: holds {} values, but the dump's config makes the slot {} values", d.path,
          builtin_slot(s.index).name, s.values.size(), rs.replayed.size()));
    rs.match = compare_buffers(s.values, rs.replayed);
    if (rs.dumped_kinds && !rs.replayed_kinds) all_back = false;
    r.slots.push_back(std::move(rs));
  }
  r.verdict = all_back ? Verdict::Reproducible : Verdict::Transient;
  return r;
}

}  // namespace nanscope
