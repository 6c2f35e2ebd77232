/* A trainer built against ABI 1's first header (tests/abi/abi1/nanscope/nanscope.h, frozen), run
 * against the current library: its ns_step_result is smaller than the library's, and the library
 * must accept it, fill it, and write nothing past it. Every call's status is checked; any
 * difference from what ABI 1 promises exits nonzero with the reason.
 *
 * abi1_program RUN_DIR */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <nanscope/nanscope.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    ns_status status_ = (call);                                                        \
    if (status_ != NS_OK) {                                                            \
      fprintf(stderr, "%s: %d (%s)\n", #call, (int)status_, ns_last_error());          \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)
#define EXPECT(cond)                                    \
  do {                                                  \
    if (!(cond)) {                                      \
      fprintf(stderr, "expected %s\n", #cond);          \
      return 1;                                         \
    }                                                   \
  } while (0)

/* The result with what a later library might write past it: must stay as it is. */
typedef struct {
  ns_step_result r;
  unsigned char after[16];
} guarded_result;

static int after_untouched(const guarded_result* g) {
  size_t i;
  for (i = 0; i < sizeof g->after; ++i)
    if (g->after[i] != 0xab) return 0;
  return 1;
}

int main(int argc, char** argv) {
  static float x[64], h[32];
  ns_session_options o = NS_SESSION_OPTIONS_INIT;
  ns_slot_desc d = NS_SLOT_DESC_INIT;
  ns_session s;
  int32_t ix = -1, ih = -1, step;
  if (argc != 2) {
    fprintf(stderr, "usage: abi1_program RUN_DIR\n");
    return 2;
  }
  EXPECT(sizeof(ns_step_result) == 28); /* ABI 1's first struct, smaller than the library's */
  EXPECT(ns_abi_version() == NS_ABI_VERSION);
  o.run_dir = argv[1];
  o.trainer = "abi1_program";
  o.guard = 1;
  o.halt_on_nan = 1;
  o.overwrite = 1;
  o.folds = 1;
  CHECK(ns_session_open(&o, &s));
  d.name = "x";
  d.phase = "forward";
  d.order = 0;
  d.consumers = "h";
  d.count = 64;
  d.address = (uint64_t)(uintptr_t)x;
  CHECK(ns_slot_register(s, &d, &ix));
  d.name = "h";
  d.order = 1;
  d.consumers = NULL;
  d.count = 32;
  d.address = (uint64_t)(uintptr_t)h;
  CHECK(ns_slot_register(s, &d, &ih));
  CHECK(ns_fold_begin(s, 0));
  for (step = 0; step < 5; ++step) {
    int32_t ids[2];
    guarded_result g;
    memset(&g, 0xab, sizeof g);
    g.r.struct_size = (uint32_t)sizeof g.r;
    ids[0] = ix;
    ids[1] = ih;
    h[7] = step == 2 ? NAN : 0.5f; /* the bug: h goes NaN at step 2 */
    CHECK(ns_step_begin(s, step, NULL));
    CHECK(ns_check(s, ids, 2, NULL));
    CHECK(ns_step_end(s, &g.r));
    EXPECT(after_untouched(&g));
    EXPECT(g.r.struct_size == sizeof g.r);
    EXPECT(g.r.fired == (step == 2));
    EXPECT(g.r.entry_slot == (step >= 2 ? ih : -1));
    EXPECT(g.r.entry_step == (step >= 2 ? 2 : -1));
    EXPECT(g.r.halt == (step >= 2 ? NS_HALT_NAN : NS_HALT_NONE)); /* latched for the fold */
    EXPECT(g.r.updated == (step != 2));
  }
  CHECK(ns_fold_end(s, 0));
  CHECK(ns_session_close(s));
  printf("abi1_program: ABI 1's first structs ran on nanscope %d (entry h at step 2)\n",
         ns_abi_version());
  return 0;
}
