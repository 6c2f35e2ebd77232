/* A small MLP regression trainer that checks its buffers with nanscope's SDK (docs/sdk.md).
 *
 *   c_mlp RUN_DIR [--bug] [--folds N] [--steps N]
 *
 * Each fold trains on its own window of synthetic sensor data. From step 20 of fold 1 on, sensor 3
 * is stuck at one value. The trainer standardises each feature by its batch statistics; with
 * --bug it divides by the standard deviation without an epsilon, so a stuck sensor gives 0/0 = NaN
 * in the standardised batch (slot x_norm), and the NaN then runs through every later buffer.
 * Without --bug an epsilon keeps it finite. The guard skips the update of a step that fired, so
 * the parameters stay finite either way. Exit status: 0, or 1 when an SDK call failed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanscope/nanscope.h>

enum { FEATURES = 8, HIDDEN = 16, BATCH = 32 };

/* The parameters, their gradients and every buffer the step checks. */
typedef struct {
  float w1[FEATURES * HIDDEN], b1[HIDDEN], w2[HIDDEN], b2[1];
} params_t;
#define N_PARAMS ((int)(sizeof(params_t) / sizeof(float)))

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
  if (session) ns_session_close(session);
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

/* One slot: its name, phase, order, consumers and buffer. */
static int add_slot(const char* name, const char* phase, int order, const char* consumers,
                    const float* buffer, int64_t count, ns_slot_role role, int32_t* id) {
  ns_slot_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.name = name;
  d.phase = phase;
  d.order = order;
  d.consumers = consumers;
  d.count = count;
  d.dtype = NS_F32;
  d.memory = NS_HOST;
  d.address = (uint64_t)(uintptr_t)buffer;
  d.state = buffer ? NS_SLOT_CHECKED : NS_SLOT_ABSENT;
  d.role = role;
  return ns_slot_register(session, &d, id) == NS_OK;
}

int main(int argc, char** argv) {
  const char* run_dir = NULL;
  int bug = 0, folds = 3, steps = 40;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--bug")) bug = 1;
    else if (!strcmp(argv[i], "--folds") && i + 1 < argc) folds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (argv[i][0] != '-' && !run_dir) run_dir = argv[i];
    else {
      fprintf(stderr, "usage: c_mlp RUN_DIR [--bug] [--folds N] [--steps N]\n");
      return 2;
    }
  }
  if (!run_dir || folds < 1 || steps < 1) {
    fprintf(stderr, "usage: c_mlp RUN_DIR [--bug] [--folds N] [--steps N]\n");
    return 2;
  }

  ns_session_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
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

  enum { X, X_NORM, H, DROPOUT, Y_HAT, LOSS, D_Y, D_H, GRADS, GRAD_NORM, PARAMS, SLOTS };
  int32_t id[SLOTS];
  if (!add_slot("x", "sample", 0, "x_norm", x, BATCH * FEATURES, NS_ROLE_NONE, &id[X]) ||
      !add_slot("x_norm", "forward", 1, "h", x_norm, BATCH * FEATURES, NS_ROLE_NONE, &id[X_NORM]) ||
      !add_slot("h", "forward", 2, "y_hat, d_h, grads", h, BATCH * HIDDEN, NS_ROLE_NONE, &id[H]) ||
      /* this MLP has no dropout: the slot exists in the table, absent in this run */
      !add_slot("dropout_mask", "forward", 3, "y_hat", NULL, 0, NS_ROLE_NONE, &id[DROPOUT]) ||
      !add_slot("y_hat", "forward", 4, "loss, d_y", y_hat, BATCH, NS_ROLE_NONE, &id[Y_HAT]) ||
      !add_slot("loss", "forward", 5, NULL, loss, 1, NS_ROLE_LOSS, &id[LOSS]) ||
      !add_slot("d_y", "backward", 6, "d_h, grads", d_y, BATCH, NS_ROLE_NONE, &id[D_Y]) ||
      !add_slot("d_h", "backward", 7, "grads", d_h, BATCH * HIDDEN, NS_ROLE_NONE, &id[D_H]) ||
      !add_slot("grads", "backward", 8, "grad_norm, params", (const float*)&grads, N_PARAMS, NS_ROLE_NONE,
                &id[GRADS]) ||
      !add_slot("grad_norm", "backward", 9, NULL, grad_norm, 1, NS_ROLE_GRAD_NORM, &id[GRAD_NORM]) ||
      !add_slot("params", "optimizer", 10, NULL, (const float*)&params, N_PARAMS, NS_ROLE_NONE, &id[PARAMS]))
    return failed(NS_ERR_ARGUMENT, "ns_slot_register");

  rng_state = 42;
  float* p = (float*)&params;
  for (int i = 0; i < N_PARAMS; ++i) p[i] = 0.3f * (uniform() - 0.5f);

  const int32_t forward_slots[] = {id[X], id[X_NORM], id[H], id[DROPOUT], id[Y_HAT], id[LOSS]};
  const int32_t backward_slots[] = {id[D_Y], id[D_H], id[GRADS], id[GRAD_NORM]};
  for (int fold = 0; fold < folds; ++fold) {
    CALL(ns_fold_begin(session, fold));
    int entry = -1, entry_step = -1;
    for (int step = 0; step < steps; ++step) {
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
      ns_step_result r;
      memset(&r, 0, sizeof r);
      r.struct_size = sizeof r;
      CALL(ns_step_end(session, &r));
      entry = r.entry_slot;
      entry_step = r.entry_step;
    }
    CALL(ns_fold_end(session, fold));
    printf("fold %d: loss %.5f, ", fold, loss[0]);
    if (entry >= 0)
      printf("entry slot %d at step %d\n", entry, entry_step);
    else
      printf("clean\n");
  }
  CALL(ns_session_close(session));
  return 0;
}
