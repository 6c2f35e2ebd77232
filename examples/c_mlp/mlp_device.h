/* c_mlp's device path (mlp_device.cu): the same MLP on a CUDA device with cuBLAS, its step
 * enqueued on one stream and, with `graph`, captured once as a CUDA graph and replayed. The SDK
 * checks the device buffers on that stream, inside the capture too. */
#ifndef C_MLP_DEVICE_H
#define C_MLP_DEVICE_H

#include <stdint.h>

#include <nanscope/nanscope.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device buffers, laid out as the host ones (params and grads as params_t). */
typedef struct {
  float *x, *x_norm, *h, *y_hat, *target, *loss, *d_y, *d_h, *grads, *grad_norm, *params;
} mlp_device_buffers;

/* The slot groups the step checks: after the forward pass, after the backward pass, after the
 * update. */
typedef struct {
  const int32_t* forward;
  int32_t n_forward;
  const int32_t* backward;
  int32_t n_backward;
  int32_t params;
} mlp_device_checks;

/* Allocates the buffers and uploads the initial parameters; 0, or 1 with a message on stderr. */
int mlp_device_open(const float* params, int n_params, mlp_device_buffers* out);
/* One step: the batch (x, target on the host) copied in, the forward pass, the backward pass and
 * the update that the guard word allows. With `graph` the first call captures the step (the SDK's
 * calls included) and every call replays it. Returns the SDK status of the first call that failed
 * (NS_OK: none); *result is the step's. */
ns_status mlp_device_step(ns_session session, int step, const mlp_device_checks* checks,
                          const float* x, const float* target, int bug, int graph,
                          ns_step_result* result);
float mlp_device_loss(void);
void mlp_device_close(void);

#ifdef __cplusplus
}
#endif

#endif
