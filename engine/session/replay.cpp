#include "session/replay.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/config_io.h"
#include "core/errors.h"
#include "core/sentinel.h"

namespace nanscope {
namespace {

// Records every checked slot's kinds during the replayed step; nothing else.
class ReplayObserver final : public SlotObserver {
 public:
  ReplayObserver(Backend& b, SlotSetup setup) : backend_(b), setup_(std::move(setup)) {}
  void check(int slot) override {
    if (!setup_.checked(slot)) return;
    SlotView v = backend_.slot(slot);
    const ScanResult r = v.is_f64 ? scan_nonfinite(static_cast<const double*>(v.data), v.count)
                                  : scan_nonfinite(static_cast<const float*>(v.data), v.count);
    flags[static_cast<std::size_t>(slot)] |= r.kinds;
  }
  std::array<std::uint8_t, kSlotCount> flags{};

 private:
  Backend& backend_;
  SlotSetup setup_;
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
    if (d.param_shapes[p] != want) throw DataError(fmt::format("dump: '{}' has the wrong shape", e->name));
    const auto from = static_cast<std::ptrdiff_t>(offsets[p]);
    const auto to = from + static_cast<std::ptrdiff_t>(e->count);
    out.params.insert(out.params.end(), d.state.params.begin() + from, d.state.params.begin() + to);
    out.target.insert(out.target.end(), d.state.target.begin() + from, d.state.target.begin() + to);
    out.adam_m.insert(out.adam_m.end(), d.state.adam_m.begin() + from, d.state.adam_m.begin() + to);
    out.adam_v.insert(out.adam_v.end(), d.state.adam_v.begin() + from, d.state.adam_v.begin() + to);
  }
  return out;
}

}  // namespace

Config dump_config(const DumpData& d) {
  ConfigBuilder b;
  b.load_text(d.config_toml, "dump config");
  return b.build();
}

ReplayResult replay_dump(const DumpData& d, Backend& backend) {
  const Config config = dump_config(d);
  backend.write_state(state_for_layout(d, backend.layout()));
  backend.set_batch(d.batch);
  ReplayObserver obs(backend, slot_setup(config));
  backend.set_observer(&obs);
  const StepKey key{config.run.seed, d.fold, d.step, d.global_step};
  for (int p = static_cast<int>(Phase::Forward); p < kPhaseCount; ++p)
    backend.run_phase(static_cast<Phase>(p), key);
  backend.set_observer(nullptr);
  // The batch is installed, not sampled: its check runs here, on the installed values.
  SlotView batch = backend.slot(kBatch);
  obs.flags[kBatch] |= (batch.is_f64 ? scan_nonfinite(static_cast<const double*>(batch.data), batch.count)
                                     : scan_nonfinite(static_cast<const float*>(batch.data), batch.count)).kinds;

  ReplayResult r;
  r.replayed_flags = obs.flags;
  bool all_back = true;
  for (const DumpSlot& s : d.slots) {
    ReplaySlot rs{s.index, s.scan.kinds, obs.flags[static_cast<std::size_t>(s.index)]};
    if (rs.dumped_kinds && !rs.replayed_kinds) all_back = false;
    r.slots.push_back(rs);
  }
  r.verdict = all_back ? "reproducible" : "transient";
  return r;
}

}  // namespace nanscope
