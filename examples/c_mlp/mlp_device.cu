/* c_mlp's device path (mlp_device.h): cuBLAS for the products, small kernels for the rest, one
 * stream; with --graph the step is captured once (cudaStreamBeginCapture ... EndCapture) and
 * replayed, and ns_step_replayed accounts for each replay. Every kernel is deterministic (no
 * atomics), so a replay computes what the ungraphed step computes, bit for bit. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "mlp_device.h"
#include "mlp_dims.h"

namespace {

mlp_device_buffers buf;
float *pinned_x, *pinned_target; /* the captured copies read the batch from here */
cudaStream_t stream;
cublasHandle_t blas;
void* blas_workspace;
cudaGraphExec_t graph_exec;
uint32_t* guard_word;

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  fprintf(stderr, "c_mlp: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

/* One thread per feature: the batch's mean and standard deviation (with --bug no epsilon). */
__global__ void standardise(const float* x, float* x_norm, int bug) {
  const int f = threadIdx.x;
  if (f >= FEATURES) return;
  float mean = 0, var = 0;
  for (int b = 0; b < BATCH; ++b) mean += x[b * FEATURES + f];
  mean /= BATCH;
  for (int b = 0; b < BATCH; ++b) {
    const float d = x[b * FEATURES + f] - mean;
    var += d * d;
  }
  const float sd = sqrtf(var / BATCH) + (bug ? 0.0f : 1e-6f);
  for (int b = 0; b < BATCH; ++b) x_norm[b * FEATURES + f] = (x[b * FEATURES + f] - mean) / sd;
}

__global__ void bias_relu(float* h, const float* b1) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < BATCH * HIDDEN) {
    const float a = h[i] + b1[i % HIDDEN];
    h[i] = a > 0 ? a : 0;
  }
}

/* One block of BATCH threads: y_hat gets b2, the loss (a tree sum in a fixed order), d_y and the
 * gradient of b2. */
__global__ void loss_and_d_y(float* y_hat, const float* target, const float* b2, float* loss,
                             float* d_y, float* grad_b2) {
  __shared__ float sq[BATCH], dy[BATCH];
  const int b = threadIdx.x;
  y_hat[b] += b2[0];
  const float e = y_hat[b] - target[b];
  sq[b] = e * e;
  dy[b] = d_y[b] = 2.0f * e / BATCH;
  __syncthreads();
  for (int half = BATCH / 2; half > 0; half /= 2) {
    if (b < half) {
      sq[b] += sq[b + half];
      dy[b] += dy[b + half];
    }
    __syncthreads();
  }
  if (b == 0) {
    loss[0] = sq[0] / BATCH;
    grad_b2[0] = dy[0];
  }
}

/* One thread per hidden unit: d_h's column and the gradient of b1. */
__global__ void d_hidden(const float* h, const float* d_y, const float* w2, float* d_h,
                         float* grad_b1) {
  const int j = threadIdx.x;
  if (j >= HIDDEN) return;
  float sum = 0;
  for (int b = 0; b < BATCH; ++b) {
    const float d = h[b * HIDDEN + j] > 0 ? d_y[b] * w2[j] : 0;
    d_h[b * HIDDEN + j] = d;
    sum += d;
  }
  grad_b1[j] = sum;
}

/* One block: the gradient's norm, summed in double in a fixed order. */
__global__ void norm(const float* g, float* out) {
  __shared__ double part[256];
  double s = 0;
  for (int i = threadIdx.x; i < N_PARAMS; i += blockDim.x) s += (double)g[i] * g[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = (float)sqrt(part[0]);
}

/* The guard word (nanscope's, on the device) decides: non-zero skips the update. */
__global__ void update(float* p, const float* g, const uint32_t* guard, float lr) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N_PARAMS && *guard == 0) p[i] -= lr * g[i];
}

/* Offsets into params_t / grads. */
constexpr int kW1 = 0, kB1 = FEATURES * HIDDEN, kW2 = kB1 + HIDDEN, kB2 = kW2 + HIDDEN;

#define NS_TRY(expr)             \
  do {                           \
    const ns_status s_ = (expr); \
    if (s_ != NS_OK) return s_;  \
  } while (0)

/* The step's work on `stream`, the SDK's calls between. Row-major [rows x cols] arrays are
 * column-major [cols x rows] to cuBLAS. */
ns_status enqueue_step(ns_session s, int step, const mlp_device_checks* c, int bug) {
  const float one = 1, zero = 0;
  NS_TRY(ns_step_begin(s, step, stream));
  cudaMemcpyAsync(buf.x, pinned_x, sizeof(float) * BATCH * FEATURES, cudaMemcpyHostToDevice,
                  stream);
  cudaMemcpyAsync(buf.target, pinned_target, sizeof(float) * BATCH, cudaMemcpyHostToDevice, stream);
  standardise<<<1, 32, 0, stream>>>(buf.x, buf.x_norm, bug);
  /* h = relu(x_norm W1 + b1); y_hat = h w2 (+ b2 in loss_and_d_y) */
  cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, HIDDEN, BATCH, FEATURES, &one, buf.params + kW1,
              HIDDEN, buf.x_norm, FEATURES, &zero, buf.h, HIDDEN);
  bias_relu<<<(BATCH * HIDDEN + 127) / 128, 128, 0, stream>>>(buf.h, buf.params + kB1);
  cublasSgemv(blas, CUBLAS_OP_T, HIDDEN, BATCH, &one, buf.h, HIDDEN, buf.params + kW2, 1, &zero,
              buf.y_hat, 1);
  loss_and_d_y<<<1, BATCH, 0, stream>>>(buf.y_hat, buf.target, buf.params + kB2, buf.loss, buf.d_y,
                                        buf.grads + kB2);
  NS_TRY(ns_check(s, c->forward, c->n_forward, stream));
  /* grads: w2 = h^T d_y, d_h and b1, w1 = x_norm^T d_h, then the norm */
  cublasSgemv(blas, CUBLAS_OP_N, HIDDEN, BATCH, &one, buf.h, HIDDEN, buf.d_y, 1, &zero,
              buf.grads + kW2, 1);
  d_hidden<<<1, 32, 0, stream>>>(buf.h, buf.d_y, buf.params + kW2, buf.d_h, buf.grads + kB1);
  cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, HIDDEN, FEATURES, BATCH, &one, buf.d_h, HIDDEN,
              buf.x_norm, FEATURES, &zero, buf.grads + kW1, HIDDEN);
  norm<<<1, 256, 0, stream>>>(buf.grads, buf.grad_norm);
  NS_TRY(ns_check(s, c->backward, c->n_backward, stream));
  update<<<(N_PARAMS + 127) / 128, 128, 0, stream>>>(buf.params, buf.grads, guard_word, 0.05f);
  NS_TRY(ns_check(s, &c->params, 1, stream));
  return NS_OK;
}

}  // namespace

extern "C" int mlp_device_open(const float* params, int n_params, mlp_device_buffers* out) {
  float** all[] = {&buf.x,   &buf.x_norm, &buf.h,     &buf.y_hat,     &buf.target, &buf.loss,
                   &buf.d_y, &buf.d_h,    &buf.grads, &buf.grad_norm, &buf.params};
  const size_t sizes[] = {BATCH * FEATURES,
                          BATCH * FEATURES,
                          BATCH * HIDDEN,
                          BATCH,
                          BATCH,
                          1,
                          BATCH,
                          BATCH * HIDDEN,
                          (size_t)n_params,
                          1,
                          (size_t)n_params};
  for (int i = 0; i < 11; ++i)
    if (!cuda_ok(cudaMalloc(all[i], sizes[i] * sizeof(float)), "cudaMalloc")) return 1;
  if (!cuda_ok(cudaMemcpy(buf.params, params, sizeof(float) * n_params, cudaMemcpyHostToDevice),
               "upload") ||
      !cuda_ok(cudaMallocHost(&pinned_x, sizeof(float) * BATCH * FEATURES), "cudaMallocHost") ||
      !cuda_ok(cudaMallocHost(&pinned_target, sizeof(float) * BATCH), "cudaMallocHost") ||
      !cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream") ||
      !cuda_ok(cudaMalloc(&blas_workspace, 4 << 20), "cudaMalloc"))
    return 1;
  /* cuBLAS on the step's stream with its own workspace: nothing is allocated during capture. */
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(blas, blas_workspace, 4 << 20) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "c_mlp: cuBLAS could not start\n");
    return 1;
  }
  *out = buf;
  return 0;
}

extern "C" ns_status mlp_device_step(ns_session s, int step, const mlp_device_checks* c,
                                     const float* x, const float* target, int bug, int graph,
                                     ns_step_result* result) {
  if (!guard_word) {
    uint64_t address = 0;
    NS_TRY(ns_guard_word(s, &address));
    guard_word = (uint32_t*)(uintptr_t)address;
  }
  /* The batch goes through pinned memory, which the (captured) copies read when they run. */
  cudaStreamSynchronize(stream);
  memcpy(pinned_x, x, sizeof(float) * BATCH * FEATURES);
  memcpy(pinned_target, target, sizeof(float) * BATCH);
  if (!graph) {
    NS_TRY(enqueue_step(s, step, c, bug));
    return ns_step_end(s, result);
  }
  if (!graph_exec) {
    cudaGraph_t g;
    if (!cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "capture"))
      return NS_ERR_DEVICE;
    ns_status st = enqueue_step(s, step, c, bug);
    if (st == NS_OK) st = ns_step_end(s, result); /* captured: nothing ran yet */
    const cudaError_t e = cudaStreamEndCapture(stream, &g);
    if (st != NS_OK) return st;
    if (!cuda_ok(e, "capture") || !cuda_ok(cudaGraphInstantiate(&graph_exec, g, 0), "instantiate"))
      return NS_ERR_DEVICE;
    cudaGraphDestroy(g);
  }
  if (!cuda_ok(cudaGraphLaunch(graph_exec, stream), "graph launch")) return NS_ERR_DEVICE;
  return ns_step_replayed(s, stream, result);
}

extern "C" float mlp_device_loss(void) {
  float loss = 0;
  cudaStreamSynchronize(stream);
  cudaMemcpy(&loss, buf.loss, sizeof loss, cudaMemcpyDeviceToHost);
  return loss;
}

extern "C" void mlp_device_close(void) {
  if (graph_exec) cudaGraphExecDestroy(graph_exec);
  cublasDestroy(blas);
  float* all[] = {buf.x,   buf.x_norm, buf.h,     buf.y_hat,     buf.target, buf.loss,
                  buf.d_y, buf.d_h,    buf.grads, buf.grad_norm, buf.params};
  for (float* p : all) cudaFree(p);
  cudaFree(blas_workspace);
  cudaFreeHost(pinned_x);
  cudaFreeHost(pinned_target);
  cudaStreamDestroy(stream);
}
