// CudaBackend's declaration, private to the CUDA library. Its definitions are split by concern:
// cuda_backend.cpp (construction, state, parameters, batch, slot buffers, transfers),
// cuda_backend_step.cpp (the phases, their slot call sites, graph capture and replay),
// cuda_backend_checks.cpp (what the check bank asks of the backend: step records as outcomes, the
// context sources of first-fire capture and their readback) and test_seams.cpp (the test
// seams). The checks themselves are the CudaCheckBank's (cuda_check_bank.h).
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
#include "cuda_check_bank.h"
#include "device_array.h"
#include "first_fire_capture.h"
#include "forward_losses.h"
#include "model/backend.h"
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

class CudaBackend final : public Backend, private CheckBankHost {
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
  StepLosses losses() const override { return checks_.losses(); }
  void set_observer(SlotObserver* o) override { observer_ = o; }
  std::vector<double> read_param(const std::string& name, bool target) const override;
  void write_param(const std::string& name, const std::vector<double>& values) override;
  std::int64_t adam_step() const override;
  void read_state(StateSnapshot& s) const override {
    read_state_at(state_.params.get(), state_.target.get(), state_.adam.get(), state_.t.get(), s);
  }
  void write_state(const StateSnapshot& s) override;
  void keep_state() override;
  void read_kept_state(StateSnapshot& s) const override;
  std::size_t checkpoint_bytes() const override {
    return 4 * state_.params.size() * sizeof(float) + sizeof(std::int64_t);
  }
  void reserve_checkpoints(int capacity) override;
  void keep_checkpoint(int index) override;
  void read_checkpoint(int index, StateSnapshot& s) const override;
  BatchContext batch_context() const override;
  void set_batch(const BatchContext& b) override;
  CheckBank& checks() override { return checks_; }
  void run_step(const StepKey& key) override;
  bool supports_step_graph() const override { return true; }
  void set_step_graph(bool on) override { graph_.on = on; }
  int step_graph_captures() const override { return graph_.captures; }
  std::int64_t device_to_host_copies() const override { return d2h_; }

  // The test seams (test_seams.cpp): the bank, whose launches a log may note, and the last
  // captured step graph's shape.
  CudaCheckBank& check_bank() { return checks_; }
  const StepGraphShape& graph_shape() const { return graph_.shape; }
  // The step captured anew and profiled (graph_profile.h); the next step captures again.
  StepGraphProfile profile_graph(int replays);

 private:
  // ---- The step (cuda_backend_step.cpp) ----
  // One phase's work; the same function whether enqueued directly or captured into the graph.
  void phase_body(Phase phase);
  // What changes from step to step, written to device memory before the step's work.
  void set_step_keys(const StepKey& key);
  void drop_graph();
  // The step captured as a graph (the caller owns it), then instantiated as the step graph.
  cudaGraph_t record_step_graph();
  void capture();
  void sample();
  void forward();
  void optimizer();
  // The call sites: injection right after the producer (`produced`), then the check.
  void produced(int slot) {
    if (observer_) observer_->produced(slot);
  }
  void check_site(int slot) { checks_.check_site(slot); }
  // The session's checks are collected by the bank and enqueued as fused launches where the step
  // needs their result: with the guard, before the update (it reads the status word; slot 21's
  // check waits for after it, the guard reads the norms itself); at the step's end (Adam's slots,
  // and without the guard everything not checked beside the step); and before anything that reads
  // the bank or writes a slot buffer from the host. So the records are those of checking each slot
  // at its site, in one or two launches per ungraphed step (with health off, iqn_phi, 22 and 23 are
  // checked by their producers, CudaCheckBank::producer_sink) instead of two per slot.
  void flush_checks() { checks_.flush(stream_.s); }
  // In a captured graph (lanes on), the checks due so far go to the check lane beside the step (at
  // the forward's end, and with the guard after slot 35: nothing writes a checked buffer after its
  // site until the update); the update (with the guard) or the step's record waits for that lane.
  // Without the lanes, they stay due for the step's launches.
  // `ready`: where the due checks' buffers are finished (lane 0's current point by default).
  void flush_checks_beside(Lanes::Mark ready) {
    if (!lanes_.parallel()) return;
    lanes_.wait(kCheckLane, ready);
    checks_.flush(lanes_.stream(kCheckLane));
  }
  void flush_checks_beside() { flush_checks_beside(lanes_.mark()); }
  static constexpr int kCheckLane = Lanes::kSideLanes;  // a lane of its own
  void site(int slot) {
    produced(slot);
    check_site(slot);
  }

  // ---- CheckBankHost (cuda_backend_checks.cpp) ----
  DevBuf check_buffer(int slot) override { return read_buf(slot); }
  void observe_check(int slot) override {
    if (observer_) observer_->check(slot);
  }
  bool host_writes(int slot) override { return observer_ && observer_->overwrites(slot); }
  void download_bytes(void* host, const void* dev, std::size_t bytes) override {
    download(static_cast<unsigned char*>(host), static_cast<const unsigned char*>(dev), bytes);
  }
  void count_copies(int n) override { d2h_ += n; }
  StepOutcome outcome_of(const StepKey& key, const StepStatusRecord& h) const override;
  SlotView view_of(int slot, const float* dev, std::size_t n) override {
    return mirror_view(slot, dev, n);
  }
  std::vector<ContextCapture::Source> context_sources(const AdamShadow& shadow) override;
  void read_context(const std::function<const void*(int)>& at, StateSnapshot& state,
                    BatchContext& batch) override;
  void capture_changed() override {
    sync();
    drop_graph();
  }
  std::size_t param_count() const override { return state_.params.size(); }

  // ---- Slot buffers ----
  // A slot's device buffer (cuda_check_bank.h's DevBuf), its length the buffer object's own.
  static DevBuf of(DeviceArray<float>& a) { return DevBuf{a.get(), a.size()}; }
  // Where a slot's check reads (and slot() shows): 33 and 34 read their own copies.
  DevBuf read_buf(int slot);
  // Where an injection writes: the live buffer the next consumer reads.
  DevBuf write_buf(int slot);
  void build_slot_buffers();

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

  // The trainer's state on the device: parameters, target network, Adam's [m | v] and t.
  struct TrainerState {
    explicit TrainerState(std::size_t n) : params(n), target(n), adam(2 * n) {}
    DeviceArray<float> params, target, adam;
    DeviceArray<std::int64_t> t{1};
  };
  void copy_state_to(TrainerState& dst);
  // The three networks' passes: online on s, online on s' (double DQN), target on s'.
  struct Networks {
    explicit Networks(const Dims& d) : online(d), online_next(d), target_next(d) {}
    NetBuffers online, online_next, target_next;
  };
  // The batch's fields inside the sampler's batch buffer.
  struct BatchFields {
    const float *s = nullptr, *s_next = nullptr, *ret = nullptr, *done = nullptr,
                *next_bar = nullptr;
  };
  // Slots 33 and 34 are checked on copies: the buffer they name changes later in the step.
  struct BackwardCopies {
    explicit BackwardCopies(std::size_t n) : main(n), aux(n) {}
    DeviceArray<float> main, aux;
  };
  // The update_ratio watch: the update Adam leaves, its norms and the weights' per group (empty
  // while no watch asks for them).
  struct UpdateRatio {
    DeviceArray<float> delta, update_norms, weight_norms;
  };
  // The step graph: the instantiated graph, its shape, the checked slots it was captured with, how
  // many captures there were, and whether whole steps run as the graph.
  struct StepGraph {
    GraphExec exec;
    StepGraphShape shape;
    SlotSet checked;
    int captures = 0;
    bool on = false;
  };
  struct Weights {
    LossWeights f{};
    LossWeightsD d{};
  };
  struct BackwardMarks {
    Lanes::Mark cleared;    // the backward's gradients zeroed (on a side lane, at the step's start)
    Lanes::Mark mse_terms;  // the MSE and CQL terms made (beside the C51 projection)
    Lanes::Mark bw_start;   // the backward's start, where the heads' side lanes begin
    Lanes::Mark heads_done;  // slot 35's buffer made: every check site up to 35 finished
  };
  // Each slot's shape (what the dumps store), live buffer (the slot-to-buffer table built once)
  // and host mirror (what slot() shows).
  struct SlotBuffers {
    std::array<std::vector<std::int64_t>, kBuiltinSlotCount> shapes;
    std::array<DevBuf, kBuiltinSlotCount> live{};
    std::array<std::vector<float>, kBuiltinSlotCount> mirrors;
  };

  Config c_;
  Dims d_;
  ParamLayout L_;
  Stream stream_;
  Blas blas_;
  Lanes lanes_;  // the step's side lanes, on while a graph is captured
  DeviceSampler sampler_;
  TrainerState state_, kept_;              // live, and kept just before the update (keep_state)
  std::vector<TrainerState> checkpoints_;  // time travel's ring (reserve_checkpoints)
  Networks nets_;
  HeadBuffers heads_;
  IqnBuffers iqn_;
  BackwardBuffers bw_;
  BackwardCopies bw_copies_;
  DeviceArray<float> norms_;  // the gradient norms [global, per group] (slot 21)
  UpdateRatio ratio_;
  DeviceOptimizer opt_;
  DeviceArray<double> scalars_;      // the loss terms' batch means (kSc*)
  DeviceArray<std::int64_t> gstep_;  // the global step (target sync)
  CudaCheckBank checks_;
  StepGraph graph_;
  BatchFields batch_;
  ForwardState fwd_{};
  BackwardMarks marks_;
  Weights loss_weights_;
  SlotHook hook_ = [this](int slot) { produced(slot); };
  SlotBuffers slots_;
  SlotObserver* observer_ = nullptr;
  std::string device_name_;
  mutable std::int64_t d2h_ = 0;
};

}  // namespace nanscope::cuda
