// float64 instantiation of the CPU reference trainer (finite-difference tests, careful replays).
#include "model/cpu_backward.inl"
#include "model/cpu_forward.inl"
#include "model/cpu_model_core.inl"
#include "model/cpu_optimizer.inl"

namespace nanscope {
template class CpuModel<double>;
}
