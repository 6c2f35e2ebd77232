// A Backend that forwards every call to another one (the CPU backend): the base of the test
// backends that change one behaviour (a device error on demand, checks kept "on a device").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/backend.h"

namespace nanscope::test {

class DelegatingBackend : public Backend {
 public:
  explicit DelegatingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  BackendKind kind() const override { return inner_->kind(); }
  std::string device_name() const override { return inner_->device_name(); }
  const Dims& dims() const override { return inner_->dims(); }
  const ParamLayout& layout() const override { return inner_->layout(); }
  void reset_parameters() override { inner_->reset_parameters(); }
  void load_fold(const TransitionSet& t) override { inner_->load_fold(t); }
  void run_phase(Phase phase, const StepKey& key) override { inner_->run_phase(phase, key); }
  SlotView slot(int i) override { return inner_->slot(i); }
  std::vector<Overwritten> inject_slot(int i, std::optional<std::size_t> e, double v) override {
    return inner_->inject_slot(i, e, v);
  }
  StepLosses losses() const override { return inner_->losses(); }
  void set_observer(SlotObserver* o) override { inner_->set_observer(o); }
  std::vector<double> read_param(const std::string& n, bool t) const override {
    return inner_->read_param(n, t);
  }
  void write_param(const std::string& n, const std::vector<double>& v) override {
    inner_->write_param(n, v);
  }
  std::int64_t adam_step() const override { return inner_->adam_step(); }
  void read_state(StateSnapshot& s) const override { inner_->read_state(s); }
  void write_state(const StateSnapshot& s) override { inner_->write_state(s); }
  void keep_state() override { inner_->keep_state(); }
  void read_kept_state(StateSnapshot& s) const override { inner_->read_kept_state(s); }
  BatchContext batch_context() const override { return inner_->batch_context(); }
  void set_batch(const BatchContext& b) override { inner_->set_batch(b); }
  CheckBank& checks() override { return inner_->checks(); }

 protected:
  std::unique_ptr<Backend> inner_;
};

}  // namespace nanscope::test
