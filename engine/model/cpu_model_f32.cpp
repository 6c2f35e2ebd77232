// float32 instantiation of the CPU reference trainer (the default: overflow points match the GPU).
#include "model/cpu_backward.inl"
#include "model/cpu_forward.inl"
#include "model/cpu_model_core.inl"
#include "model/cpu_optimizer.inl"

namespace nanscope {
template class CpuModel<float>;
}
