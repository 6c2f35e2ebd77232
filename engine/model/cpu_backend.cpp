// The CPU reference backend: phases over CpuModel<float> or CpuModel<double>.
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "core/errors.h"
#include "model/backend.h"
#include "model/cpu_model.h"
#include "model/memory_estimate.h"
#include "model/state_pack.h"

namespace nanscope {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "CPU";
}

template <class T>
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const Config& c) : model_(c), bank_(*this, model_.config) {
    model_.sites = &bank_;
  }

  BackendKind kind() const override { return BackendKind::Cpu; }
  std::string device_name() const override {
    return fmt::format("{} ({})", cpu_model_name(),
                       std::is_same_v<T, float> ? "float32" : "float64");
  }
  const Dims& dims() const override { return model_.d; }
  const ParamLayout& layout() const override { return model_.layout; }
  void reset_parameters() override { model_.reset_parameters(); }
  void load_fold(const TransitionSet& t) override { model_.load_fold(t); }

  void run_phase(Phase phase, const StepKey& key) override {
    switch (phase) {
      case Phase::Sample:
        model_.sample(key);
        break;
      case Phase::Forward:
        model_.forward();
        break;
      case Phase::BackwardMain:
        model_.backward_main();
        break;
      case Phase::BackwardAux:
        model_.backward_aux();
        break;
      case Phase::BackwardIqn:
        model_.backward_iqn();
        break;
      case Phase::BackwardEncoder:
        model_.backward_encoder();
        break;
      case Phase::ChecksPostBackward:
        model_.checks_post_backward();
        break;
      case Phase::Optimizer:
        model_.optimizer(key);
        break;
    }
  }

  SlotView slot(int index) override { return model_.slot_view(index); }
  std::vector<Overwritten> inject_slot(int index, std::optional<std::size_t> element,
                                       double value) override {
    SlotView v = model_.slot_view(index);
    std::vector<Overwritten> old;
    auto write = [&](std::size_t i) {
      old.push_back({i, v.at(i)});
      static_cast<T*>(const_cast<void*>(v.data))[i] = static_cast<T>(value);
    };
    if (element)
      write(*element);
    else
      for (std::size_t i = 0; i < v.count; ++i) write(i);
    return old;
  }
  StepLosses losses() const override { return model_.losses; }
  void set_observer(SlotObserver* o) override { bank_.set_observer(o); }
  CheckBank& checks() override { return bank_; }

  std::vector<double> read_param(const std::string& name, bool target) const override {
    const ParamEntry* e = entry(name);
    const auto& flat = target ? model_.target : model_.params;
    return std::vector<double>(flat.begin() + static_cast<std::ptrdiff_t>(e->offset),
                               flat.begin() + static_cast<std::ptrdiff_t>(e->offset + e->count));
  }
  void write_param(const std::string& name, const std::vector<double>& values) override {
    const ParamEntry* e = entry(name);
    if (values.size() != e->count)
      throw InternalError(
          fmt::format("parameter '{}' has {} elements, got {}", name, e->count, values.size()));
    for (std::size_t i = 0; i < e->count; ++i)
      model_.params[e->offset + i] = static_cast<T>(values[i]);
  }
  std::int64_t adam_step() const override { return model_.adam_t; }

  void read_state(StateSnapshot& s) const override {
    pack_state(model_.layout, model_.params, model_.target, model_.adam, model_.adam_t, s);
  }
  void write_state(const StateSnapshot& s) override {
    unpack_state(model_.layout, s, model_.params, model_.target, model_.adam, model_.adam_t);
  }
  void keep_state() override { read_state(kept_); }
  void read_kept_state(StateSnapshot& s) const override { s = kept_; }

  BatchContext batch_context() const override { return model_.batch_context(); }
  void set_batch(const BatchContext& b) override { model_.set_batch(b); }

 private:
  const ParamEntry* entry(const std::string& name) const {
    const ParamEntry* e = model_.layout.find(name);
    if (!e) throw UsageError(fmt::format("unknown parameter '{}'", name));
    return e;
  }
  CpuModel<T> model_;
  CpuCheckBank bank_;
  StateSnapshot kept_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Config& config) {
  require_host_memory(config);  // before any buffer is allocated
  if (config.model.precision == Precision::Float64)
    return std::make_unique<CpuBackend<double>>(config);
  return std::make_unique<CpuBackend<float>>(config);
}

}  // namespace nanscope
