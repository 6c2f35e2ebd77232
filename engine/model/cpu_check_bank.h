// The CPU backend's bank: each slot scanned at its call site, in the step's call-site order, its
// records kept in a SentinelBank; first fires copied there and then when capturing; the guard
// decided once, before the update, and reported as it was decided (StepOutcome::updated). Every
// step's outcome is handed over at its end.
#pragma once

#include "model/check_bank.h"

namespace nanscope {

// What the CPU model's step calls at the slot call sites (cpu_model.h): the bank is the model's.
class CpuCallSites {
 public:
  virtual ~CpuCallSites() = default;
  virtual void produced(int slot) = 0;
  virtual void check(int slot) = 0;
  // Before the optimizer's update: may it update?
  virtual bool allow_update() = 0;
  // After an update, with the update_ratio watch on: each group's update norm over its weight norm.
  virtual void updated_by(const std::array<double, kGroupCount>& ratio) = 0;
};

class CpuCheckBank final : public CheckBank, public CpuCallSites {
 public:
  // `backend` is the bank's owner: its slot buffers, state and batch are what first fires keep.
  CpuCheckBank(Backend& backend, const Config& config);
  void set_observer(SlotObserver* observer) { observer_ = observer; }

  // ---- CheckBank ----
  void begin_fold(const SlotSetup& setup) override;
  void set_checked(int slot, bool on) override { bank_.set_checked(slot, on); }
  void set_capture(bool on) override { capture_ = on; }
  void set_report_each_step(bool on) override { (void)on; }  // it always does
  void begin_step(const StepKey& key) override;
  std::vector<StepOutcome> end_step() override;
  std::vector<StepOutcome> take_held() override { return {}; }
  void check_now(int slot) override { check(slot); }

  // ---- CpuCallSites ----
  void produced(int slot) override {
    if (observer_) observer_->produced(slot);
  }
  void check(int slot) override;
  bool allow_update() override;
  void updated_by(const std::array<double, kGroupCount>& ratio) override {
    out_.update_ratio = ratio;
  }

 private:
  void keep_context();
  // The learner's health fields (C51 mass, quantile crossing) when a watch needs them.
  void measure_learner(int slot, const SlotView& v);

  Backend& backend_;
  const Config& config_;
  SlotObserver* observer_ = nullptr;
  SentinelBank bank_;
  bool capture_ = false, updating_done_ = false;
  StepOutcome out_;
};

}  // namespace nanscope
