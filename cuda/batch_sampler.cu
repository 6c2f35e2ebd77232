#include "batch_sampler.h"
#include "data/philox.h"
#include "device_array.h"

namespace nanscope::cuda {
namespace {

constexpr int F = kFeatureCount;
constexpr int D = kBranches;
constexpr int AO = kNextBarTargets;

// The three tau draws of a step: output j takes indices [first[j], first[j + 1]) of one index
// space.
struct TauDraws {
  float* out[3];
  DrawStream stream[3];
  std::uint64_t first[4];
};

// A step's whole draw in one launch (one node on the step graph's chain instead of four): blocks
// [0, gather_blocks) gather the batch, one warp per row (lanes copy the row's features side by
// side; every lane draws the row's index, the same value); the blocks after them draw the taus, one
// per thread. (fold, step) are read from device memory (set_key), so a captured graph draws each
// step's batch. Each value is the one-thread-per-row form's, bit for bit.
constexpr int kDrawThreads = 128;
constexpr int kRowsPerBlock = kDrawThreads / 32;

__global__ void draw_step(std::uint64_t seed, const std::uint32_t* __restrict__ key, int B,
                          std::uint32_t pool, const float* __restrict__ state,
                          const float* __restrict__ next_state, const float* __restrict__ ret,
                          const float* __restrict__ done, const float* __restrict__ next_bar,
                          const std::int32_t* __restrict__ action, float* __restrict__ batch,
                          std::int32_t* __restrict__ actions, unsigned gather_blocks,
                          TauDraws taus) {
  const std::uint32_t fold = key[0], step = key[1];
  if (blockIdx.x >= gather_blocks) {
    const std::uint64_t k =
        (blockIdx.x - gather_blocks) * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
    for (int j = 0; j < 3; ++j)
      if (k >= taus.first[j] && k < taus.first[j + 1]) {
        const std::uint64_t i = k - taus.first[j];
        taus.out[j][i] =
            static_cast<float>(u32_to_open01(draw_u32(seed, taus.stream[j], fold, step, i)));
      }
    return;
  }
  const int b = static_cast<int>(blockIdx.x) * kRowsPerBlock + static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (b >= B) return;
  const std::uint32_t i = u32_to_index(
      draw_u32(seed, DrawStream::BatchIndex, fold, step, static_cast<std::uint64_t>(b)), pool);
  for (int f = lane; f < F; f += 32) {
    batch[static_cast<size_t>(b) * F + f] = state[static_cast<size_t>(i) * F + f];
    batch[static_cast<size_t>(B) * F + static_cast<size_t>(b) * F + f] =
        next_state[static_cast<size_t>(i) * F + f];
  }
  float* tail = batch + static_cast<size_t>(B) * 2 * F;
  if (lane == 0) {
    tail[b] = ret[i];
    tail[B + b] = done[i];
  }
  for (int k = lane; k < AO; k += 32)
    tail[2 * B + b * AO + k] = next_bar[static_cast<size_t>(i) * AO + k];
  for (int k = lane; k < D; k += 32) actions[b * D + k] = action[static_cast<size_t>(i) * D + k];
}

__global__ void set_key_kernel(std::uint32_t* key, std::uint32_t fold, std::uint32_t step) {
  key[0] = fold;
  key[1] = step;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

struct DeviceSampler::Impl {
  SamplerShape shape;
  cudaStream_t stream;
  std::uint32_t pool = 0;
  DeviceArray<float> state, next_state, ret, done, next_bar;
  DeviceArray<std::int32_t> action;
  DeviceArray<float> batch, tau, tau_target, tau_greedy;
  DeviceArray<std::int32_t> actions;
  DeviceArray<std::uint32_t> key{2};  // (fold, step) of the draws
};

DeviceSampler::DeviceSampler(const SamplerShape& s, cudaStream_t stream) : impl_(new Impl) {
  impl_->shape = s;
  impl_->stream = stream;
  impl_->batch = DeviceArray<float>(static_cast<size_t>(s.B) * (2 * F + 2 + AO));
  impl_->actions = DeviceArray<std::int32_t>(static_cast<size_t>(s.B) * D);
  if (s.iqn) {
    impl_->tau = DeviceArray<float>(static_cast<size_t>(s.B) * s.N);
    impl_->tau_target = DeviceArray<float>(static_cast<size_t>(s.B) * s.Np);
    impl_->tau_greedy = DeviceArray<float>(static_cast<size_t>(s.B) * s.K);
  }
}

DeviceSampler::~DeviceSampler() = default;

void DeviceSampler::load_fold(const TransitionSet& t) {
  Impl& m = *impl_;
  m.pool = static_cast<std::uint32_t>(t.count);
  auto up = [](DeviceArray<float>& d, const std::vector<double>& h) {
    d = DeviceArray<float>(h.size());
    d.upload(to_float(h));
  };
  up(m.state, t.state);
  up(m.next_state, t.next_state);
  up(m.ret, t.ret);
  up(m.done, t.done);
  up(m.next_bar, t.next_bar);
  m.action = DeviceArray<std::int32_t>(t.action.size());
  m.action.upload(t.action);
}

void DeviceSampler::sample(std::uint64_t seed, int fold, int step) {
  set_key(fold, step);
  draw(seed);
}

void DeviceSampler::set_key(int fold, int step) {
  set_key_kernel<<<1, 1, 0, impl_->stream>>>(impl_->key.get(), static_cast<std::uint32_t>(fold),
                                             static_cast<std::uint32_t>(step));
  NANSCOPE_LAUNCH_CHECK();
}

void DeviceSampler::draw(std::uint64_t seed) {
  Impl& m = *impl_;
  const int B = m.shape.B;
  const unsigned gather_blocks = static_cast<unsigned>((B + kRowsPerBlock - 1) / kRowsPerBlock);
  TauDraws taus{};
  taus.out[0] = m.tau.get();
  taus.out[1] = m.tau_target.get();
  taus.out[2] = m.tau_greedy.get();
  taus.stream[0] = DrawStream::Tau;
  taus.stream[1] = DrawStream::TauTarget;
  taus.stream[2] = DrawStream::TauGreedy;
  taus.first[0] = 0;
  taus.first[1] = m.tau.size();  // all three empty without the IQN head
  taus.first[2] = taus.first[1] + m.tau_target.size();
  taus.first[3] = taus.first[2] + m.tau_greedy.size();
  const std::uint64_t tau_blocks = (taus.first[3] + kDrawThreads - 1) / kDrawThreads;
  draw_step<<<gather_blocks + static_cast<unsigned>(tau_blocks), kDrawThreads, 0, m.stream>>>(
      seed, m.key.get(), B, m.pool, m.state.get(), m.next_state.get(), m.ret.get(), m.done.get(),
      m.next_bar.get(), m.action.get(), m.batch.get(), m.actions.get(), gather_blocks, taus);
  NANSCOPE_LAUNCH_CHECK();
}

DeviceSampler::Buffers DeviceSampler::buffers() {
  Impl& m = *impl_;
  return Buffers{m.batch.get(),      m.actions.get(), m.tau.get(), m.tau_target.get(),
                 m.tau_greedy.get(), m.batch.size(),  m.tau.size()};
}

const float* DeviceSampler::batch() const {
  return impl_->batch.get();
}
std::size_t DeviceSampler::batch_count() const {
  return impl_->batch.size();
}
const std::int32_t* DeviceSampler::actions() const {
  return impl_->actions.get();
}
const float* DeviceSampler::tau() const {
  return impl_->tau.get();
}
const float* DeviceSampler::tau_target() const {
  return impl_->tau_target.get();
}
const float* DeviceSampler::tau_greedy() const {
  return impl_->tau_greedy.get();
}

}  // namespace nanscope::cuda
