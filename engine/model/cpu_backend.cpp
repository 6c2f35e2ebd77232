// The CPU reference backend: phases over CpuModel<float> or CpuModel<double>.
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "core/errors.h"
#include "model/backend.h"
#include "model/cpu_model.h"

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
  explicit CpuBackend(const Config& c) : model_(c) {}

  std::string name() const override { return "cpu"; }
  std::string device_name() const override {
    return fmt::format("{} ({})", cpu_model_name(), std::is_same_v<T, float> ? "float32" : "float64");
  }
  const Dims& dims() const override { return model_.d; }
  const ParamLayout& layout() const override { return model_.layout; }
  void reset_parameters() override { model_.reset_parameters(); }
  void load_fold(const TransitionSet& t) override { model_.load_fold(t); }

  void run_phase(Phase phase, const StepKey& key) override {
    switch (phase) {
      case Phase::Sample: model_.sample(key); break;
      case Phase::Forward: model_.forward(); break;
      case Phase::BackwardMain: model_.backward_main(); break;
      case Phase::BackwardAux: model_.backward_aux(); break;
      case Phase::BackwardIqn: model_.backward_iqn(); break;
      case Phase::BackwardEncoder: model_.backward_encoder(); break;
      case Phase::ChecksPostBackward: model_.checks_post_backward(); break;
      case Phase::Optimizer: model_.optimizer(key); break;
    }
  }

  SlotView slot(int index) override { return model_.slot_view(index); }
  SlotView slot_for_write(int index) override { return model_.slot_view(index); }
  StepLosses losses() const override { return model_.losses; }
  void set_observer(SlotObserver* o) override { model_.observer = o; }

  std::vector<double> read_param(const std::string& name, bool target) const override {
    const ParamEntry* e = entry(name);
    const auto& flat = target ? model_.target : model_.params;
    return std::vector<double>(flat.begin() + static_cast<std::ptrdiff_t>(e->offset),
                               flat.begin() + static_cast<std::ptrdiff_t>(e->offset + e->count));
  }
  void write_param(const std::string& name, const std::vector<double>& values) override {
    const ParamEntry* e = entry(name);
    if (values.size() != e->count)
      throw InternalError(fmt::format("parameter '{}' has {} elements, got {}", name, e->count,
                                      values.size()));
    for (std::size_t i = 0; i < e->count; ++i)
      model_.params[e->offset + i] = static_cast<T>(values[i]);
  }
  std::int64_t adam_step() const override { return model_.adam_t; }

  void read_state(StateSnapshot& s) const override {
    const auto entries = model_.layout.existing();
    std::size_t n = 0;
    for (const ParamEntry* e : entries) n += e->count;
    for (auto* v : {&s.params, &s.target, &s.adam_m, &s.adam_v}) v->resize(n);
    const std::size_t total = model_.layout.total();
    std::size_t k = 0;
    for (const ParamEntry* e : entries)
      for (std::size_t i = e->offset; i < e->offset + e->count; ++i, ++k) {
        s.params[k] = model_.params[i];
        s.target[k] = model_.target[i];
        s.adam_m[k] = model_.adam[i];
        s.adam_v[k] = model_.adam[total + i];
      }
    s.adam_t = model_.adam_t;
  }

  void write_state(const StateSnapshot& s) override {
    const std::size_t total = model_.layout.total();
    std::size_t k = 0;
    for (const ParamEntry* e : model_.layout.existing())
      for (std::size_t i = e->offset; i < e->offset + e->count; ++i, ++k) {
        model_.params[i] = static_cast<T>(s.params.at(k));
        model_.target[i] = static_cast<T>(s.target.at(k));
        model_.adam[i] = static_cast<T>(s.adam_m.at(k));
        model_.adam[total + i] = static_cast<T>(s.adam_v.at(k));
      }
    model_.adam_t = s.adam_t;
  }

  BatchContext batch_context() const override { return model_.batch_context(); }
  void set_batch(const BatchContext& b) override { model_.set_batch(b); }

 private:
  const ParamEntry* entry(const std::string& name) const {
    const ParamEntry* e = model_.layout.find(name);
    if (!e) throw UsageError(fmt::format("unknown parameter '{}'", name));
    return e;
  }
  CpuModel<T> model_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Config& config) {
  if (config.model.precision == "float64") return std::make_unique<CpuBackend<double>>(config);
  return std::make_unique<CpuBackend<float>>(config);
}

}  // namespace nanscope
