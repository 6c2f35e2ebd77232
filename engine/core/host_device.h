// NANSCOPE_HD: a function compiled for both sides, the host compiler's and nvcc's device code
// (the definitions the CPU backend, the SDK and the CUDA kernels share).
#pragma once

#ifdef __CUDACC__
#define NANSCOPE_HD __host__ __device__
#else
#define NANSCOPE_HD
#endif
