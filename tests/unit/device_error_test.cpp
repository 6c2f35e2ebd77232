// A device error (what the CUDA backend throws for a failed launch, copy or cuBLAS call) stops the
// session: it is reported as a DeviceError, the session refuses further work with a message that
// says so, and reset() makes it usable again. Checked here with a backend that fails on demand.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "delegating_backend.h"
#include "session/session.h"
#include "test_support.h"

using namespace nanscope;

namespace {

// The CPU backend, failing once in the chosen phase of the chosen global step.
class FailingBackend final : public test::DelegatingBackend {
 public:
  FailingBackend(const Config& c, std::int64_t fail_step, Phase fail_phase)
      : DelegatingBackend(make_cpu_backend(c)), fail_step_(fail_step), fail_phase_(fail_phase) {}
  void run_phase(Phase phase, const StepKey& key) override {
    if (armed_ && key.global_step == fail_step_ && phase == fail_phase_) {
      armed_ = false;
      throw DeviceError("backward.cu:123: cublasSgemm(...): cuBLAS status 14");
    }
    inner_->run_phase(phase, key);
  }

 private:
  std::int64_t fail_step_;
  Phase fail_phase_;
  bool armed_ = true;
};

}  // namespace

TEST(DeviceErrors, StopTheSessionForGood) {
  Config c = test::tiny_config(Precision::Float32);
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
    EXPECT_NE(std::string(e.what()).find("a new session"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuBLAS status 14"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.step_phase(), DeviceError);
  EXPECT_THROW(s.run(), DeviceError);
  EXPECT_EQ(s.global_step(), 2);
}
