#include "stream_lanes.h"

#include <cstdlib>
#include <string>

#include "device_array.h"

namespace nanscope::cuda {

bool step_lanes_on() {
  static const bool on = env_switch("NANSCOPE_STEP_LANES", true);
  return on;
}

Lanes::Lanes(cudaStream_t main, Blas& main_blas) : main_(main), main_blas_(main_blas) {}

void Lanes::prepare() {
  if (side_blas_.back()) return;
  try {
    for (auto& e : events_)
      NANSCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (std::size_t i = 0; i < side_.size(); ++i) {
      NANSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&side_[i], cudaStreamNonBlocking));
      side_blas_[i] = std::make_unique<Blas>(side_[i]);
    }
  } catch (...) {  // a failure part way frees what was made
    release();
    throw;
  }
}

Lanes::~Lanes() {
  release();
}

void Lanes::release() {
  for (auto& b : side_blas_) b.reset();
  for (auto& s : side_)
    if (s) cudaStreamDestroy(s);
  for (auto& e : events_)
    if (e) cudaEventDestroy(e);
  side_.fill(nullptr);
  events_.fill(nullptr);
}

void Lanes::set_parallel(bool on) {
  if (on && !side_blas_.back()) throw InternalError("Lanes: parallel before prepare()");
  parallel_ = on;
  next_event_ = 0;
  joined_.fill(false);
}

Blas& Lanes::blas(int lane) {
  if (lane < 0 || lane >= kLanes) throw InternalError("Lanes: no lane " + std::to_string(lane));
  if (!parallel_ || lane == 0) return main_blas_;
  const auto i = static_cast<std::size_t>(lane - 1);
  if (!joined_[i])
    throw InternalError("Lanes: lane " + std::to_string(lane) + " used before a wait");
  return *side_blas_[i];
}

GemmWork Lanes::tally() const {
  GemmWork t = main_blas_.tally();
  for (const auto& b : side_blas_)
    if (b) t.add(b->tally());
  return t;
}

void Lanes::reset_tally() {
  main_blas_.reset_tally();
  for (auto& b : side_blas_)
    if (b) b->reset_tally();
}

Lanes::Mark Lanes::mark(int lane) {
  if (!parallel_) return {};
  if (next_event_ >= kEvents) throw InternalError("Lanes: more marks in a step than events");
  const int e = next_event_++;
  NANSCOPE_CUDA_CHECK(cudaEventRecord(events_[static_cast<std::size_t>(e)], stream(lane)));
  return {e};
}

void Lanes::wait(int lane, Mark m) {
  if (!parallel_ || m.event < 0) return;
  if (lane < 0 || lane >= kLanes) throw InternalError("Lanes: no lane " + std::to_string(lane));
  cudaStream_t s = lane == 0 ? main_ : side_[static_cast<std::size_t>(lane - 1)];
  NANSCOPE_CUDA_CHECK(cudaStreamWaitEvent(s, events_[static_cast<std::size_t>(m.event)], 0));
  if (lane > 0) joined_[static_cast<std::size_t>(lane - 1)] = true;
}

void Lanes::join(int lane) {
  if (parallel_ && lane > 0 && lane < kLanes && joined_[static_cast<std::size_t>(lane - 1)])
    wait(0, mark(lane));
}

void Lanes::gather(int lane) {
  if (!parallel_) return;
  for (int other = 0; other < kLanes; ++other)
    if (other != lane && (other == 0 || joined_[static_cast<std::size_t>(other - 1)]))
      wait(lane, mark(other));
}

void Lanes::join_all_but(int skip) {
  if (!parallel_) return;
  for (int lane = 1; lane < kLanes; ++lane)
    if (lane != skip && joined_[static_cast<std::size_t>(lane - 1)]) wait(0, mark(lane));
}

}  // namespace nanscope::cuda
