// The CUDA backend's CheckBank (docs/building.md, "A check's path"), like CpuCheckBank for the CPU
// backend: the device bank with its fused checks, the checks due but not yet enqueued, the slots
// their producers check in place, the execution positions taken ahead, the slot setup, the steps
// run but not handed over, each step's status record, and first-fire capture (the slots' areas, the
// optimizer's shadow, the context areas). It turns held steps into step outcomes with one status
// record per step while clean, or a fold's records and history at once.
//
// It owns no trainer buffer: the backend that does (CudaBackend) answers the few questions the bank
// asks through CheckBankHost (where a slot's check reads, what a step record means as losses, the
// state and batch at a context area's addresses, the observer's part in a check).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "device_array.h"
#include "first_fire_capture.h"
#include "model/backend.h"
#include "model/check_bank.h"
#include "optimizer.h"
#include "sentinel_check.h"
#include "step_record.h"
#include "test_seams.h"

namespace nanscope::cuda {

// A slot's device buffer and its length.
struct DevBuf {
  float* p = nullptr;
  std::size_t n = 0;
};

class CheckBankHost {
 public:
  // Where a slot's check reads ({} for a slot the run does not have).
  virtual DevBuf check_buffer(int slot) = 0;
  // The observer's part in a check site (after the device check is due), and whether it writes a
  // slot from the host (then the slot's producer may not check it in place).
  virtual void observe_check(int slot) = 0;
  virtual bool host_writes(int slot) = 0;
  // A counted device-to-host copy on the backend's stream (synchronises), and copies counted that
  // the bank's own pieces made.
  virtual void download_bytes(void* host, const void* dev, std::size_t bytes) = 0;
  virtual void count_copies(int n) = 0;
  // The step's losses, health and update as its record holds them.
  virtual StepOutcome outcome_of(const StepKey& key, const StepStatusRecord& record) const = 0;
  // A host view of `n` floats at `dev` shaped as slot `slot`.
  virtual SlotView view_of(int slot, const float* dev, std::size_t n) = 0;
  // The context sources, in the order of ContextSource, given the optimizer's shadow; and the
  // state and batch read back from an area's copies of them (`at(source)`).
  virtual std::vector<ContextCapture::Source> context_sources(const AdamShadow& shadow) = 0;
  virtual void read_context(const std::function<const void*(int)>& at, StateSnapshot& state,
                            BatchContext& batch) = 0;
  // The step graph gains or loses the capture's work: the backend drops it (after a sync).
  virtual void capture_changed() = 0;
  // The parameters' and Adam's [m | v] element counts (the shadow's sizes).
  virtual std::size_t param_count() const = 0;

 protected:
  ~CheckBankHost() = default;
};

// The context sources of a captured step, in the order context_sources gives them.
enum ContextSource {
  kShadowParams,
  kTargetParams,
  kShadowAdam,
  kShadowT,
  kBatchArrays,
  kActions,
  kTau,
  kTauTarget,
  kTauGreedy
};

class CudaCheckBank final : public CheckBank {
 public:
  CudaCheckBank(const Config& c, const Dims& d, CheckBankHost& host, cudaStream_t stream);
  ~CudaCheckBank() override;

  // ---- CheckBank ----
  void begin_fold(const SlotSetup& setup) override;
  void set_checked(int slot, bool on) override { setup_.set_checked(slot, on); }
  void set_capture(bool on) override;
  void set_report_each_step(bool on) override { report_each_ = on; }
  void begin_step(const StepKey& key) override;
  std::vector<StepOutcome> end_step() override;
  std::vector<StepOutcome> take_held() override { return hand_over(); }
  void check_now(int slot) override { check_site(slot); }

  // ---- The step's call sites (enqueue only, graph-capturable) ----
  // A check site: the device check of a checked slot is due (enqueued by a flush) unless its
  // producer took it; every site takes an execution position. Then the observer's `check`.
  void check_site(int slot);
  // A slot its producer checks in place, when the session allows it (checked at this step, not
  // written from the host, health off: with health on the fused check measures every checked
  // slot): the producer kernel gets the bank's sink and the site enqueues nothing. The capture copy
  // of such a slot waits for the step's end (copy_late_captures).
  SlotSink producer_sink(int slot);
  // Execution positions taken ahead for check sites that come after a producer kernel which runs
  // before an earlier site (Adam writes adam_moments and params, whose sites follow in that order).
  void reserve_site(int slot) {
    reserved_exec_[static_cast<std::size_t>(slot)] = bank_.take_exec();
  }
  // Enqueues the checks due so far as fused launches on `stream` (the bank's by default). Deferring
  // is exact: every slot buffer stays as its check site saw it until its check (the backend keeps
  // copies of the two that change later, 33 and 34).
  void flush(cudaStream_t stream);
  void flush() { flush(bank_.stream()); }
  bool has_due() const { return !due_.empty() || !measures_.empty(); }
  // The gradient norm's check taken out of the due checks (the guard reads the norms itself, so
  // their check goes with the update's slots after it), and put back first.
  std::vector<DeviceBank::GroupItem> take_due(int slot);
  void put_back_first(const std::vector<DeviceBank::GroupItem>& items);
  // After the update: the capture copies of the slots their producers checked.
  void copy_late_captures();
  // Where the update leaves the state it started from ({} without capture), and the context's
  // capture at the step's end; the step's record packed from the bank's words.
  AdamShadow optimizer_shadow();
  void capture_context();
  void pack_record(const double* scalars, const float* total, const float* norms,
                   const StepHealthIn& health, cudaStream_t stream);
  // The guard's inputs and output: the status word the update reads, the word it leaves.
  const std::uint32_t* status_word() const { return bank_.status_word(); }
  std::uint32_t* updated_word() { return updated_.get(); }
  bool health() const { return bank_.health(); }
  DeviceStepHealth step_health() const { return bank_.step_health(); }
  // After a failed capture: nothing of it stays due.
  void drop_due();
  // The steps' losses as the last hand-over read them.
  const StepLosses& losses() const { return losses_; }
  const SlotSetup& setup() const { return setup_; }

  // For bench/sentinel and the GPU tests (test_seams.cpp): the launches noted while set.
  void set_launch_log(StepCheckPlan* log) { launch_log_ = log; }

 private:
  struct Capture;
  void measure_learner(int slot, const DevBuf& b, cudaStream_t stream);
  int site_exec(int slot);
  float* capture_area(int slot);
  std::vector<StepOutcome> hand_over();
  void fill_fires(StepOutcome& o, const BankReadback& r, int row);
  void take_context_table();

  const Config& c_;
  const Dims& d_;  // the backend's
  CheckBankHost& host_;
  DeviceBank bank_;
  DeviceArray<unsigned char> records_;  // a StepStatusRecord per step of the fold
  DeviceArray<std::uint32_t> updated_;  // 1: the step's update ran (AdamGuard::updated)
  SlotSetup setup_;
  StepKey step_;  // the current step (the device bank's step word holds it for the kernels)
  std::vector<StepKey> held_;  // the steps run but not handed over (this fold's)
  bool report_each_ = true;
  std::vector<DeviceBank::GroupItem> due_;              // see flush
  std::vector<std::pair<int, DevBuf>> measures_;        // measure_learner's, with the checks
  std::uint64_t in_producer_ = 0;                       // see producer_sink
  std::array<int, kBuiltinSlotCount> reserved_exec_{};  // see reserve_site (-1: none)
  std::vector<DeviceBank::GroupItem> late_captures_;    // see producer_sink
  std::unique_ptr<Capture> cap_;                        // first-fire capture, when on
  int capture_areas_ = 0;
  StepLosses losses_;
  StepCheckPlan* launch_log_ = nullptr;
};

}  // namespace nanscope::cuda
