// The step's independent branches side by side inside its captured graph. Lane 0 is the backend's
// stream; lanes 1..kSideLanes are side streams, each with its own cuBLAS handle (a handle's
// workspace is not shared between streams). A lane waits for a point of another lane's order
// (`mark`, `wait`): captured, these are the graph's edges, so the graph has parallel branches
// exactly where the step's data allow them. Every sum into a shared buffer stays on one lane in
// the order it had, so the step is bit for bit the serial one.
//
// Off (`set_parallel(false)`, outside a capture), every lane is the backend's stream and marks and
// waits do nothing: the phase-by-phase step, whose observer may write slot buffers from the host
// between two kernels, stays one stream in host order.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>

#include "dense.h"

namespace nanscope::cuda {

// The debug switch NANSCOPE_STEP_LANES=0 (environment): the step graph is captured on one stream,
// as a chain (to compare the two, or to rule the lanes out).
bool step_lanes_on();

class Lanes {
 public:
  static constexpr int kSideLanes = 8;
  static constexpr int kLanes = kSideLanes + 1;

  Lanes(cudaStream_t main, Blas& main_blas);
  ~Lanes();
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;

  // Makes the side lanes' streams, handles and events, once, before the first capture (not during
  // one, where allocations are not allowed; a backend that never captures never pays for them).
  void prepare();
  // On for a graph capture (after prepare), off otherwise (turning it on starts a new set of
  // marks).
  void set_parallel(bool on);
  bool parallel() const { return parallel_; }

  // A side lane's handle and stream once it waited for a mark (a stream that takes work during a
  // capture must have joined it); lane 0 always.
  Blas& blas(int lane);
  cudaStream_t stream(int lane) { return blas(lane).stream(); }

  // Every lane's GEMMs since the last reset (Blas::tally), and the reset.
  GemmWork tally() const;
  void reset_tally();

  // A point in a lane's order: everything enqueued on it so far.
  struct Mark {
    int event = -1;  // -1: nothing to wait for (lanes off)
  };
  Mark mark(int lane = 0);
  // `lane` waits for the point before what is enqueued on it next.
  void wait(int lane, Mark m);
  // `lane` waits for everything enqueued on `other` so far.
  void after(int lane, int other) { wait(lane, mark(other)); }
  // The backend's stream waits for every side lane (before the step's serial tail and the end of
  // a capture: a capture must end with every forked stream joined).
  void join_all() { join_all_but(-1); }
  // The same but for one lane (which goes on beside the step).
  void join_all_but(int lane);
  // The backend's stream waits for one lane (nothing when the lane took no work in this capture).
  void join(int lane);
  // `lane` waits for every other lane: the backend's stream and each side lane that took work.
  void gather(int lane);

 private:
  void release();
  cudaStream_t main_;
  Blas& main_blas_;
  std::array<cudaStream_t, kSideLanes> side_{};
  std::array<std::unique_ptr<Blas>, kSideLanes> side_blas_;
  // Marks of one capture, each its own event (a wait uses the event's record at the time of the
  // wait: one event per mark keeps every mark valid for the whole capture).
  static constexpr int kEvents = 96;
  std::array<cudaEvent_t, kEvents> events_{};
  int next_event_ = 0;
  bool parallel_ = false;
  // The side lanes that joined this capture (by a wait): only those may take work or be joined.
  std::array<bool, kSideLanes> joined_{};
};

}  // namespace nanscope::cuda
