/* A small MLP regression trainer that checks its buffers with nanscope's SDK (docs/sdk.md).
 *
 *   c_mlp RUN_DIR [--bug] [--folds N] [--steps N] [--device [--graph]]
 *
 * Each fold trains on its own window of synthetic sensor data. From step 20 of fold 1 on, sensor 3
 * is stuck at one value. The trainer standardises each feature by its batch statistics; with
 * --bug it divides by the standard deviation without an epsilon, so a stuck sensor gives 0/0 = NaN
 * in the standardised batch (slot x_norm), and the NaN then runs through every later buffer.
 * Without --bug an epsilon keeps it finite. The guard skips the update of a step that fired, so
 * the parameters stay finite either way. Exit status: 0, or 1 when an SDK call failed.
 *
 * Built with CUDA (c_mlp_cuda), --device trains on the GPU with cuBLAS (mlp_device.cu) and the
 * SDK checks the device buffers on the step's stream; --graph captures the step, the checks
 * included, as a CUDA graph and replays it. The host draws the same batches either way. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanscope/nanscope.h>

#include "mlp_dims.h"
#ifdef MLP_DEVICE
#include "mlp_device.h"
#endif

static float x[BATCH * FEATURES], x_norm[BATCH * FEATURES], h[BATCH * HIDDEN], y_hat[BATCH],
    target[BATCH], loss[1], d_y[BATCH], d_h[BATCH * HIDDEN], grad_norm[1];
static params_t params, grads;

static uint64_t rng_state;
static float uniform(void) { /* xorshift64*: the same data on every machine */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (float)((rng_state * 2685821657736338717ull) >> 40) / 16777216.0f;
}

static ns_session session;
static int failed(ns_status s, const char* what) {
  fprintf(stderr, "c_mlp: %s: %s (status %d)\n", what, ns_last_error(), (int)s);
  if (session.id) ns_session_close(session);
  return 1;
}
#define CALL(expr)                                   \
  do {                                               \
    ns_status status_ = (expr);                      \
    if (status_ != NS_OK) return failed(status_, #expr); \
  } while (0)

static void sample_batch(int fold, int step) {
  static const float true_w[FEATURES] = {0.5f, -1.0f, 0.25f, 2.0f, 0.0f, 1.5f, -0.5f, 0.75f};
  rng_state = 0x9E3779B97F4A7C15ull ^ ((uint64_t)fold << 32) ^ (uint64_t)(step + 1);
  for (int b = 0; b < BATCH; ++b) {
    float y = 0;
    for (int f = 0; f < FEATURES; ++f) {
      float v = 2.0f * uniform() - 1.0f;
      if (f == 3 && fold == 1 && step >= 20) v = 0.5f; /* the stuck sensor */
      x[b * FEATURES + f] = v;
      y += true_w[f] * v;
    }
    target[b] = y + 0.01f * (uniform() - 0.5f);
  }
}

static void standardise(int bug) {
  for (int f = 0; f < FEATURES; ++f) {
    float mean = 0, var = 0;
    for (int b = 0; b < BATCH; ++b) mean += x[b * FEATURES + f];
    mean /= BATCH;
    for (int b = 0; b < BATCH; ++b) var += (x[b * FEATURES + f] - mean) * (x[b * FEATURES + f] - mean);
    const float sd = sqrtf(var / BATCH) + (bug ? 0.0f : 1e-6f);
    for (int b = 0; b < BATCH; ++b) x_norm[b * FEATURES + f] = (x[b * FEATURES + f] - mean) / sd;
  }
}

static void forward(void) {
  float sum = 0;
  for (int b = 0; b < BATCH; ++b) {
    float y = params.b2[0];
    for (int j = 0; j < HIDDEN; ++j) {
      float a = params.b1[j];
      for (int f = 0; f < FEATURES; ++f) a += x_norm[b * FEATURES + f] * params.w1[f * HIDDEN + j];
      h[b * HIDDEN + j] = a > 0 ? a : 0;
      y += h[b * HIDDEN + j] * params.w2[j];
    }
    y_hat[b] = y;
    sum += (y - target[b]) * (y - target[b]);
  }
  loss[0] = sum / BATCH;
}

static void backward(void) {
  memset(&grads, 0, sizeof grads);
  for (int b = 0; b < BATCH; ++b) {
    d_y[b] = 2.0f * (y_hat[b] - target[b]) / BATCH;
    grads.b2[0] += d_y[b];
    for (int j = 0; j < HIDDEN; ++j) {
      grads.w2[j] += d_y[b] * h[b * HIDDEN + j];
      d_h[b * HIDDEN + j] = h[b * HIDDEN + j] > 0 ? d_y[b] * params.w2[j] : 0;
      grads.b1[j] += d_h[b * HIDDEN + j];
      for (int f = 0; f < FEATURES; ++f)
        grads.w1[f * HIDDEN + j] += d_h[b * HIDDEN + j] * x_norm[b * FEATURES + f];
    }
  }
  double sq = 0;
  const float* g = (const float*)&grads;
  for (int i = 0; i < N_PARAMS; ++i) sq += (double)g[i] * g[i];
  grad_norm[0] = (float)sqrt(sq);
}

static void update(float lr) {
  float* p = (float*)&params;
  const float* g = (const float*)&grads;
  for (int i = 0; i < N_PARAMS; ++i) p[i] -= lr * g[i];
}

/* Where the slots' buffers are: host memory, or the device buffers. */
static ns_memory slot_memory = NS_HOST;

/* One slot: its name, phase, order, consumers and buffer. */
static int add_slot(const char* name, const char* phase, int order, const char* consumers,
                    const float* buffer, int64_t count, ns_slot_role role, int32_t* id) {
  ns_slot_desc d = NS_SLOT_DESC_INIT;
  d.name = name;
  d.phase = phase;
  d.order = order;
  d.consumers = consumers;
  d.count = count;
  d.dtype = NS_F32;
  d.memory = slot_memory;
  d.address = (uint64_t)(uintptr_t)buffer;
  d.state = buffer ? NS_SLOT_CHECKED : NS_SLOT_ABSENT;
  d.role = role;
  return ns_slot_register(session, &d, id) == NS_OK;
}

int main(int argc, char** argv) {
  const char* run_dir = NULL;
  int bug = 0, folds = 3, steps = 40, device = 0, graph = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--bug")) bug = 1;
#ifdef MLP_DEVICE
    else if (!strcmp(argv[i], "--device")) device = 1;
    else if (!strcmp(argv[i], "--graph")) graph = device = 1;
#endif
    else if (!strcmp(argv[i], "--folds") && i + 1 < argc) folds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (argv[i][0] != '-' && !run_dir) run_dir = argv[i];
    else {
      fprintf(stderr, "usage: c_mlp RUN_DIR [--bug] [--folds N] [--steps N] [--device [--graph]]\n");
      return 2;
    }
  }
  (void)device, (void)graph; /* without CUDA: the host path only */
  if (!run_dir || folds < 1 || steps < 1) {
    fprintf(stderr, "usage: c_mlp RUN_DIR [--bug] [--folds N] [--steps N]\n");
    return 2;
  }

  ns_session_options o = NS_SESSION_OPTIONS_INIT;
  o.run_dir = run_dir;
  o.trainer = "c_mlp";
  o.config_text = bug ? "bug = true\n" : "bug = false\n";
  o.folds = folds;
  o.seed = 1;
  o.guard = 1;
  o.health = 1;
  o.capture = 1;
  o.overwrite = 1;
  CALL(ns_session_open(&o, &session));

  rng_state = 42;
  float* p = (float*)&params;
  for (int i = 0; i < N_PARAMS; ++i) p[i] = 0.3f * (uniform() - 0.5f);
  /* The buffers the slots name: the host arrays, or their device twins. */
  float *b_x = x, *b_x_norm = x_norm, *b_h = h, *b_y_hat = y_hat, *b_loss = loss, *b_d_y = d_y,
        *b_d_h = d_h, *b_grads = (float*)&grads, *b_grad_norm = grad_norm, *b_params = p;
#ifdef MLP_DEVICE
  mlp_device_buffers dev;
  if (device) {
    if (mlp_device_open(p, N_PARAMS, &dev)) return failed(NS_ERR_DEVICE, "mlp_device_open");
    slot_memory = NS_DEVICE;
    b_x = dev.x, b_x_norm = dev.x_norm, b_h = dev.h, b_y_hat = dev.y_hat, b_loss = dev.loss;
    b_d_y = dev.d_y, b_d_h = dev.d_h, b_grads = dev.grads, b_grad_norm = dev.grad_norm;
    b_params = dev.params;
  }
#endif

  enum { X, X_NORM, H, DROPOUT, Y_HAT, LOSS, D_Y, D_H, GRADS, GRAD_NORM, PARAMS, SLOTS };
  int32_t id[SLOTS];
  if (!add_slot("x", "sample", 0, "x_norm", b_x, BATCH * FEATURES, NS_ROLE_NONE, &id[X]) ||
      !add_slot("x_norm", "forward", 1, "h", b_x_norm, BATCH * FEATURES, NS_ROLE_NONE, &id[X_NORM]) ||
      !add_slot("h", "forward", 2, "y_hat, d_h, grads", b_h, BATCH * HIDDEN, NS_ROLE_NONE, &id[H]) ||
      /* this MLP has no dropout: the slot exists in the table, absent in this run */
      !add_slot("dropout_mask", "forward", 3, "y_hat", NULL, 0, NS_ROLE_NONE, &id[DROPOUT]) ||
      !add_slot("y_hat", "forward", 4, "loss, d_y", b_y_hat, BATCH, NS_ROLE_NONE, &id[Y_HAT]) ||
      !add_slot("loss", "forward", 5, NULL, b_loss, 1, NS_ROLE_LOSS, &id[LOSS]) ||
      !add_slot("d_y", "backward", 6, "d_h, grads", b_d_y, BATCH, NS_ROLE_NONE, &id[D_Y]) ||
      !add_slot("d_h", "backward", 7, "grads", b_d_h, BATCH * HIDDEN, NS_ROLE_NONE, &id[D_H]) ||
      !add_slot("grads", "backward", 8, "grad_norm, params", b_grads, N_PARAMS, NS_ROLE_NONE,
                &id[GRADS]) ||
      !add_slot("grad_norm", "backward", 9, NULL, b_grad_norm, 1, NS_ROLE_GRAD_NORM, &id[GRAD_NORM]) ||
      !add_slot("params", "optimizer", 10, NULL, b_params, N_PARAMS, NS_ROLE_NONE, &id[PARAMS]))
    return failed(NS_ERR_ARGUMENT, "ns_slot_register");

  const int32_t forward_slots[] = {id[X], id[X_NORM], id[H], id[DROPOUT], id[Y_HAT], id[LOSS]};
  const int32_t backward_slots[] = {id[D_Y], id[D_H], id[GRADS], id[GRAD_NORM]};
  for (int fold = 0; fold < folds; ++fold) {
    CALL(ns_fold_begin(session, fold));
    int entry = -1, entry_step = -1;
    for (int step = 0; step < steps; ++step) {
      ns_step_result r = NS_STEP_RESULT_INIT;
#ifdef MLP_DEVICE
      if (device) {
        const mlp_device_checks checks = {forward_slots, 6, backward_slots, 4, id[PARAMS]};
        sample_batch(fold, step);
        CALL(mlp_device_step(session, step, &checks, x, target, bug, graph, &r));
        entry = r.entry_slot;
        entry_step = r.entry_step;
        continue;
      }
#endif
      CALL(ns_step_begin(session, step, NULL));
      sample_batch(fold, step);
      standardise(bug);
      forward();
      CALL(ns_check(session, forward_slots, 6, NULL));
      backward();
      CALL(ns_check(session, backward_slots, 4, NULL));
      int32_t allowed = 0;
      CALL(ns_guard_allows_update(session, &allowed));
      if (allowed) update(0.05f);
      CALL(ns_check(session, &id[PARAMS], 1, NULL));
      CALL(ns_step_end(session, &r));
      entry = r.entry_slot;
      entry_step = r.entry_step;
    }
    CALL(ns_fold_end(session, fold));
    float last_loss = loss[0];
#ifdef MLP_DEVICE
    if (device) last_loss = mlp_device_loss();
#endif
    printf("fold %d: loss %.5f, ", fold, last_loss);
    if (entry >= 0)
      printf("entry slot %d at step %d\n", entry, entry_step);
    else
      printf("clean\n");
  }
  CALL(ns_session_close(session));
#ifdef MLP_DEVICE
  if (device) mlp_device_close();
#endif
  return 0;
}
