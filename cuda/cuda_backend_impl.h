// CudaBackend's declaration, private to the CUDA library. Its definitions are split by concern:
// cuda_backend.cpp (construction, state, parameters, batch, slot buffers, transfers),
// cuda_backend_step.cpp (the phases, their slot call sites, graph capture and replay),
// cuda_backend_sentinel.cpp (the backend's CheckBank: the bank's step, checks, producers' checks,
// readbacks into step outcomes), cuda_backend_capture.cpp (first-fire capture) and
// check_launch_log.cpp (the check launches, noted for bench/sentinel).
//
// The verified device pieces (sampler, dense layers, heads, losses, backward, optimizer, sentinel
// bank) run phase by phase on one stream, or as one captured CUDA graph of the same phase
// functions whose independent branches run on side lanes (stream_lanes.h). The slot call sites are
// the CPU backend's, in the same order: the observer's `produced` (fault injection) right after
// each producer, then the site's device check (every site takes an execution position, checked or
// not) and the observer's `check`. Everything that changes from step to step (fold and step of the
// draws, the bank's step, the global step, Adam's t) is read from device memory, set by tiny
// kernels before the step, so a replayed graph is the same step as an ungraphed one. A step makes
// no device-to-host copy unless the session reads its record.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "backward.h"
#include "batch_sampler.h"
#include "c51_heads.h"
#include "cuda_backend.h"
#include "device_array.h"
#include "first_fire_capture.h"
#include "forward_losses.h"
#include "model/backend.h"
#include "model/check_bank.h"
#include "optimizer.h"
#include "sentinel_check.h"
#include "step_record.h"
#include "stream_lanes.h"

namespace nanscope::cuda {

// The backend's stream, created first and destroyed last.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { NANSCOPE_CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

class CudaBackend final : public Backend, public CheckBank {
 public:
  CudaBackend(const Config& c, std::string device_name);
  ~CudaBackend() override;

  // ---- Backend ----
  BackendKind kind() const override { return BackendKind::Cuda; }
  std::string device_name() const override { return device_name_ + " (float32)"; }
  const Dims& dims() const override { return d_; }
  const ParamLayout& layout() const override { return L_; }
  void reset_parameters() override;
  void load_fold(const TransitionSet& t) override;
  void run_phase(Phase phase, const StepKey& key) override;
  SlotView slot(int index) override;
  std::vector<Overwritten> inject_slot(int index, std::optional<std::size_t> element,
                                       double value) override;
  StepLosses losses() const override { return losses_; }
  void set_observer(SlotObserver* o) override { observer_ = o; }
  std::vector<double> read_param(const std::string& name, bool target) const override;
  void write_param(const std::string& name, const std::vector<double>& values) override;
  std::int64_t adam_step() const override;
  void read_state(StateSnapshot& s) const override {
    read_state_at(params_.get(), target_.get(), adam_.get(), adam_t_dev_.get(), s);
  }
  void write_state(const StateSnapshot& s) override;
  void keep_state() override;
  void read_kept_state(StateSnapshot& s) const override;
  BatchContext batch_context() const override;
  void set_batch(const BatchContext& b) override;
  CheckBank& checks() override { return *this; }
  void run_step(const StepKey& key) override;
  bool supports_step_graph() const override { return true; }
  void set_step_graph(bool on) override { graph_on_ = on; }
  int step_graph_captures() const override { return captures_; }
  std::int64_t device_to_host_copies() const override { return d2h_; }

  // ---- CheckBank (cuda_backend_sentinel.cpp) ----
  void begin_fold(const SlotSetup& setup) override;
  void set_checked(int slot, bool on) override;
  void set_capture(bool on) override;
  void set_report_each_step(bool on) override { report_each_ = on; }
  void begin_step(const StepKey& key) override;
  std::vector<StepOutcome> end_step() override;
  std::vector<StepOutcome> take_held() override;
  void check_now(int slot) override { check_site(slot); }

 private:
  // ---- The step (cuda_backend_step.cpp) ----
  // One phase's work; the same function whether enqueued directly or captured into the graph.
  void phase_body(Phase phase);
  // What changes from step to step, written to device memory before the step's work.
  void set_step_keys(const StepKey& key);
  void drop_graph();
  void capture();
  void sample();
  void forward();
  void optimizer();
  // The call sites: injection right after the producer (`produced`), then the check.
  void produced(int slot) {
    if (observer_) observer_->produced(slot);
  }
  // A check site: the device check of a checked slot, enqueued (see flush_checks) unless its
  // producer took it; every site takes an execution position. Then the observer's `check`.
  void check_site(int slot);
  // The session's checks are collected and enqueued as fused launches (DeviceBank::check_group)
  // where the step needs their result: with the guard, before the update (it reads the status
  // word; slot 21's check waits for after it, the guard reads the norms itself); at the step's end
  // (Adam's slots, and without the guard everything not checked beside the step); and before
  // anything that reads the bank or writes a slot buffer from the host. Deferring is exact: every
  // slot buffer stays as its check site saw it until its check (33 and 34 have their own copies;
  // the encoder backward only reads bw_d_h_s2; the update writes no slot but 22 and 23, checked
  // after it). So the records are those of checking each slot at its site, in one or two launches
  // per ungraphed step (with health off, iqn_phi, 22 and 23 are checked by their producers, see
  // producer_sink) instead of two per slot.
  void flush_checks() { flush_checks_on(stream_.s); }
  // In a captured graph (lanes on), the checks due so far go to the check lane beside the step (at
  // the forward's end, and with the guard after slot 35: nothing writes a checked buffer after its
  // site until the update); the update (with the guard) or the step's record waits for that lane.
  // Without the lanes, they stay pending for the step's launches.
  // `ready`: where the pending checks' buffers are finished (lane 0's current point by default).
  void flush_checks_beside(Lanes::Mark ready) {
    if (!lanes_.parallel()) return;
    lanes_.wait(kCheckLane, ready);
    flush_checks_on(lanes_.stream(kCheckLane));
  }
  void flush_checks_beside() { flush_checks_beside(lanes_.mark()); }
  void flush_checks_on(cudaStream_t stream) {
    for (const auto& [slot, buf] : pending_measures_) measure_learner(slot, buf, stream);
    pending_measures_.clear();
    if (pending_checks_.empty()) return;
    std::vector<DeviceBank::GroupItem> due;
    due.swap(pending_checks_);
    if (launch_log_) {
      launch_log_->launches.emplace_back();
      for (const auto& it : due) launch_log_->launches.back().push_back({it.slot, it.count});
    }
    bank_.check_group(due, stream);
  }
  static constexpr int kCheckLane = Lanes::kSideLanes;  // a lane of its own
  // A slot its producer checks in place, when the session allows it (the slot is checked at this
  // step and nothing writes it between producer and check site): the producer kernel gets the
  // bank's sink and the check site enqueues nothing, so the fused launches never read the buffer
  // again. Used for the largest buffers whose producers are nanscope's own kernels: iqn_phi (its
  // bias-and-relu), adam_moments and params (Adam), which also makes the step's checks one launch.
  // The capture copy of such a slot waits for the step's end (copy_first_fires): nothing writes
  // those buffers after their producer within the step.
  SlotSink producer_sink(int slot);
  struct DevBuf;
  void measure_learner(int slot, const DevBuf& b, cudaStream_t stream);
  // Execution positions taken ahead for check sites that come after a producer kernel which runs
  // before an earlier site (Adam writes adam_moments and params, whose sites follow in that order):
  // the site, or the producer checking in its place, uses the reserved position.
  void reserve_site(int slot) {
    reserved_exec_[static_cast<std::size_t>(slot)] = bank_.take_exec();
  }
  int site_exec(int slot) {
    int& r = reserved_exec_[static_cast<std::size_t>(slot)];
    const int e = r >= 0 ? r : bank_.take_exec();
    r = -1;
    return e;
  }
  friend void log_check_launches(Backend& backend, StepCheckPlan* log);  // sets launch_log_
  friend StepGraphShape step_graph_shape(const Backend& backend);        // reads graph_shape_
  void site(int slot) {
    produced(slot);
    check_site(slot);
  }

  // ---- Step outcomes (cuda_backend_sentinel.cpp) ----
  // The held steps' outcomes: the one step just ended from its record (one copy while clean), or
  // several from the fold's records and history (a few copies for all of them).
  std::vector<StepOutcome> hand_over();
  StepOutcome outcome_of(const StepKey& key, const StepStatusRecord& h) const;
  // A step's kinds, first fires and (with capture) captured buffers and context, from a readback
  // whose history row `row` is the step's.
  void fill_fires(StepOutcome& o, const BankReadback& r, int row);

  // ---- First-fire capture (cuda_backend_capture.cpp); each is a no-op without capture ----
  struct Capture {
    std::array<DeviceArray<float>, kSlotCount> slots;  // each slot's buffer at its first fire
    DeviceArray<float> shadow_params, shadow_adam;     // the state the update started from
    DeviceArray<std::int64_t> shadow_t{1};
    std::unique_ptr<ContextCapture> contexts;
    std::vector<int> steps;  // the step each context area holds, from the last readback
  };
  int enable_capture(bool on);       // the context areas it has (0: off)
  SlotView captured_slot(int slot);  // a host view of the slot's capture area
  bool captured_context(int step, StateSnapshot& state, BatchContext& batch);
  float* capture_area(int slot);  // where a slot's buffer goes at its first fire
  AdamShadow optimizer_shadow();  // where the update leaves the state it started from
  void capture_context();         // enqueued at the step's end
  void take_context_table();      // with a readback of held steps
  void clear_contexts();          // a new fold

  // ---- Slot buffers ----
  // A slot's device buffer, its length taken from the buffer object itself.
  struct DevBuf {
    float* p = nullptr;
    std::size_t n = 0;
  };
  static DevBuf of(DeviceArray<float>& a) { return DevBuf{a.get(), a.size()}; }
  // Where a slot's check reads (and slot() shows): 33 and 34 read their own copies.
  DevBuf read_buf(int slot);
  // Where an injection writes: the live buffer the next consumer reads.
  DevBuf write_buf(int slot);
  void build_slot_buffers();
  std::array<DevBuf, kSlotCount> slot_bufs_{};  // each slot's live buffer (build_slot_buffers)

  // ---- Transfers (stream-ordered; every device-to-host copy is counted) ----
  void sync() const { NANSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_.s)); }
  template <class T>
  void download(T* host, const T* dev, std::size_t n) const {
    NANSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(host, dev, n * sizeof(T), cudaMemcpyDeviceToHost, stream_.s));
    sync();
    ++d2h_;
  }
  std::vector<double> download_d(const float* dev, std::size_t n) const;
  template <class T>
  void upload(T* dev, const std::vector<T>& host) {
    NANSCOPE_CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(T),
                                        cudaMemcpyHostToDevice, stream_.s));
    sync();  // the host vector may go away
  }
  void zero(void* p, std::size_t bytes) {
    NANSCOPE_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_.s));
  }
  void copy(float* dst, const float* src, std::size_t n) {
    NANSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_.s));
  }
  // The state (parameters, target, [m | v], Adam's t) at these device addresses, laid out as the
  // live arrays: the live state, the kept one, or a captured one.
  void read_state_at(const float* p, const float* t, const float* a, const std::int64_t* adam_t,
                     StateSnapshot& s) const;
  // The batch and draws at these device addresses, laid out as the sampler's buffers.
  struct BatchAt {
    const float* batch;
    const std::int32_t* actions;
    const float *tau, *tau_target, *tau_greedy;
  };
  BatchContext batch_context_at(const BatchAt& at) const;
  // A slot's view over a host copy of `n` floats at `dev` (the live buffer or a captured one).
  SlotView mirror_view(int slot, const float* dev, std::size_t n);
  const ParamEntry* entry(const std::string& name) const;

  Config c_;
  Dims d_;
  ParamLayout L_;
  Stream stream_;
  Blas blas_;
  Lanes lanes_;  // the step's side lanes, on while a graph is captured
  DeviceSampler sampler_;
  DeviceArray<float> params_, target_, adam_, kept_params_, kept_target_, kept_adam_;
  DeviceArray<std::int64_t> kept_t_{1};
  NetBuffers online_, online_next_, target_next_;
  DeviceArray<float> q_, q_next_;
  DeviceArray<std::int32_t> astar_;
  DeviceArray<float> m_, c51_, lse_, y_, mse_part_;
  IqnBuffers iqn_;
  DeviceArray<float> aux_pre_, aux_h_, pred_, aux_loss_, ve_, ens_part_, total_;
  BackwardBuffers bw_;
  DeviceArray<float> bw33_, bw34_, norms_;
  // The update_ratio watch: the update Adam leaves, and its norms and the weights' per group.
  DeviceArray<float> delta_, update_norms_, weight_norms_;
  DeviceOptimizer opt_;
  DeviceBank bank_;
  DeviceArray<double> scalars_;
  DeviceArray<unsigned char> records_;                    // a StepStatusRecord per step of the fold
  DeviceArray<std::int64_t> adam_t_dev_;                  // Adam's t
  DeviceArray<std::int64_t> gstep_;                       // the global step (target sync)
  DeviceArray<std::uint32_t> updated_;                    // 1: the step's update ran (AdamGuard)
  std::vector<DeviceBank::GroupItem> pending_checks_;     // see flush_checks
  std::vector<std::pair<int, DevBuf>> pending_measures_;  // measure_learner's, with the checks
  std::uint64_t in_producer_ =
      0;  // slots whose producer took this step's check (see producer_sink)
  std::array<int, kSlotCount> reserved_exec_{};       // see reserve_site (-1: none)
  std::vector<DeviceBank::GroupItem> late_captures_;  // the capture copies of those slots
  StepCheckPlan* launch_log_ = nullptr;  // when set (log_check_launches), the checks are noted here
  std::unique_ptr<Capture> cap_;         // first-fire capture, when on
  GraphExec graph_exec_;
  StepGraphShape graph_shape_;  // the last captured graph's
  std::uint64_t captured_checked_ = 0;
  int captures_ = 0;
  bool graph_on_ = false;
  // The bank: which slots are checked, whether the session needs each step's outcome at its end,
  // the steps run but not handed over yet (this fold's), the context areas of the capture.
  SlotSetup setup_;
  bool report_each_ = true;
  std::vector<StepKey> held_;
  StepKey step_key_;
  int capture_areas_ = 0;
  const float *s_ = nullptr, *s_next_ = nullptr, *ret_ = nullptr, *done_ = nullptr,
              *next_bar_ = nullptr;
  ForwardState fwd_{};
  Lanes::Mark bw_start_;       // the backward's start, where the heads' side lanes begin
  Lanes::Mark bw_heads_done_;  // slot 35's buffer made: every check site up to 35 finished
  LossWeights weights_{};
  LossWeightsD weights_d_{};
  SlotHook hook_ = [this](int slot) { produced(slot); };
  std::array<std::vector<std::int64_t>, kSlotCount> shapes_;
  std::array<std::vector<float>, kSlotCount> mirrors_;
  SlotObserver* observer_ = nullptr;
  StepLosses losses_;
  std::string device_name_;
  int bank_step_ = 0;  // the step the device bank records into
  mutable std::int64_t d2h_ = 0;
};

}  // namespace nanscope::cuda
