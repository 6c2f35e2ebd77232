/* c_mlp's sizes and parameter layout, shared by its host path (mlp.c) and device path. */
#ifndef C_MLP_DIMS_H
#define C_MLP_DIMS_H

enum { FEATURES = 8, HIDDEN = 16, BATCH = 32 };

/* The parameters (and their gradients), one contiguous buffer each. */
typedef struct {
  float w1[FEATURES * HIDDEN], b1[HIDDEN], w2[HIDDEN], b2[1];
} params_t;
#define N_PARAMS ((int)(sizeof(params_t) / sizeof(float)))

#endif
