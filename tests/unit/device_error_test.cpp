// A device error (what the CUDA backend throws for a failed launch, copy or cuBLAS call) stops the
// session: it is reported as a DeviceError, the session refuses further work with a message that
// says so, and reset() makes it usable again. Checked here with a backend that fails on demand.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "session/session.h"
#include "test_support.h"

using namespace nanscope;

namespace {

// The CPU backend, failing once in the chosen phase of the chosen global step.
class FailingBackend final : public Backend {
 public:
  FailingBackend(const Config& c, std::int64_t fail_step, Phase fail_phase)
      : inner_(make_cpu_backend(c)), fail_step_(fail_step), fail_phase_(fail_phase) {}
  std::string name() const override { return inner_->name(); }
  std::string device_name() const override { return inner_->device_name(); }
  const Dims& dims() const override { return inner_->dims(); }
  const ParamLayout& layout() const override { return inner_->layout(); }
  void reset_parameters() override { inner_->reset_parameters(); }
  void load_fold(const TransitionSet& t) override { inner_->load_fold(t); }
  void run_phase(Phase phase, const StepKey& key) override {
    if (armed_ && key.global_step == fail_step_ && phase == fail_phase_) {
      armed_ = false;
      throw DeviceError("backward.cu:123: cublasSgemm(...): cuBLAS status 14");
    }
    inner_->run_phase(phase, key);
  }
  SlotView slot(int i) override { return inner_->slot(i); }
  std::vector<Overwritten> inject_slot(int i, std::optional<std::size_t> e, double v) override {
    return inner_->inject_slot(i, e, v);
  }
  StepLosses losses() const override { return inner_->losses(); }
  void set_observer(SlotObserver* o) override { inner_->set_observer(o); }
  std::vector<double> read_param(const std::string& n, bool t) const override { return inner_->read_param(n, t); }
  void write_param(const std::string& n, const std::vector<double>& v) override { inner_->write_param(n, v); }
  std::int64_t adam_step() const override { return inner_->adam_step(); }
  void read_state(StateSnapshot& s) const override { inner_->read_state(s); }
  void write_state(const StateSnapshot& s) override { inner_->write_state(s); }
  void keep_state() override { inner_->keep_state(); }
  void read_kept_state(StateSnapshot& s) const override { inner_->read_kept_state(s); }
  BatchContext batch_context() const override { return inner_->batch_context(); }
  void set_batch(const BatchContext& b) override { inner_->set_batch(b); }

 private:
  std::unique_ptr<Backend> inner_;
  std::int64_t fail_step_;
  Phase fail_phase_;
  bool armed_ = true;
};

}  // namespace

TEST(DeviceErrors, StopTheSessionUntilReset) {
  Config c = test::tiny_config("float32");
  Session s(c, std::make_unique<FailingBackend>(c, 2, Phase::BackwardAux));
  s.step();
  s.step();
  try {
    s.run();
    FAIL() << "the device error was swallowed";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuBLAS status 14"), std::string::npos);
  }
  EXPECT_EQ(s.global_step(), 2);  // the failed step did not complete
  try {
    s.step();
    FAIL() << "the session went on after a device error";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("reset"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuBLAS status 14"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.step_phase(), DeviceError);
  s.reset();
  EXPECT_NO_THROW(s.run());
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.global_step(), c.run.folds * c.run.steps_per_fold);
}
