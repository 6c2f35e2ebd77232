/* nanscope SDK: NaN sentinels for any trainer (docs/sdk.md).
 *
 * A trainer registers its buffers as slots, checks them each step, and gets nanscope's fold flags,
 * entry point, guard word, slot health, halts, first-fire dumps and run file, which the
 * `nanscope` workbench and `nanscope-run` open like their own.
 *
 * C99, usable from C++, Rust (extern "C") and Python (ctypes). Every call returns an ns_status;
 * ns_last_error() says what was wrong, on the calling thread. Handles are numbers, not pointers:
 * a closed, foreign or made-up handle is refused, never followed. Structs passed in carry their
 * own size (struct_size, set it to sizeof) so that later versions can grow them.
 *
 * Copyright nanscope developers. SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef NANSCOPE_NANSCOPE_H
#define NANSCOPE_NANSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version this header belongs to; ns_version() gives the library's. The ABI version changes
 * only when a call or a struct's existing fields change meaning (docs/sdk.md, "ABI policy"). */
#define NS_VERSION_MAJOR 0
#define NS_VERSION_MINOR 1
#define NS_VERSION_PATCH 0
#define NS_ABI_VERSION 1

#if defined(_WIN32)
#define NS_API
#else
#define NS_API __attribute__((visibility("default")))
#endif

typedef enum ns_status {
  NS_OK = 0,
  NS_ERR_ARGUMENT = 1,    /* a null, out-of-range or inconsistent argument */
  NS_ERR_HANDLE = 2,      /* a session handle that is not open (closed, never opened, made up) */
  NS_ERR_STATE = 3,       /* a call at the wrong time (a step outside a fold, registration after
                             the first fold began, a second session on an open one's run_dir); a fold
                             or step number other than the next one is NS_ERR_ARGUMENT */
  NS_ERR_SLOT = 4,        /* a slot id that is not registered, or a slot in the wrong state */
  NS_ERR_MEMORY = 5,      /* a buffer that cannot be read where it was said to be */
  NS_ERR_IO = 6,          /* the run directory or a file could not be written (disk full...) */
  NS_ERR_UNSUPPORTED = 7, /* something this library does not do (a device buffer without the
                             CUDA plugin, an element type it does not check) */
  NS_ERR_VERSION = 8,     /* a struct_size smaller than this library's struct, or larger with
                             fields set in the part this library does not know */
  NS_ERR_DEVICE = 9       /* CUDA refused a call the device path made (the message has CUDA's
                             error); the session stays usable where CUDA does */
} ns_status;

/* A session: one trainer's run. 0 is never a session. */
typedef uint64_t ns_session;

typedef enum ns_dtype { NS_F32 = 0, NS_F64 = 1, NS_BF16 = 2, NS_F16 = 3 } ns_dtype;
typedef enum ns_memory { NS_HOST = 0, NS_DEVICE = 1 } ns_memory;
/* How a slot starts: checked; absent ("this buffer does not exist in this run", never checked);
 * deferred (registered, checked only once ns_slot_undefer is called). */
typedef enum ns_slot_state {
  NS_SLOT_CHECKED = 0,
  NS_SLOT_ABSENT = 1,
  NS_SLOT_DEFERRED = 2
} ns_slot_state;
/* What a slot's element 0 is to the run's metrics (the run file's /steps/loss and
 * /steps/grad_norm, the workbench's metrics plot; the grad_collapse halt reads the gradient norm).
 * At most one slot has each role. */
typedef enum ns_slot_role {
  NS_ROLE_NONE = 0,
  NS_ROLE_LOSS = 1,
  NS_ROLE_GRAD_NORM = 2
} ns_slot_role;

/* Halt reasons (ns_step_result.halt), as the trainer nanscope came from names them. */
typedef enum ns_halt {
  NS_HALT_NONE = 0,
  NS_HALT_NAN = 1,          /* halt_nan: a check fired and options.halt_on_nan is set */
  NS_HALT_GRAD_COLLAPSE = 2 /* halt_grad_collapse: the registered gradient norm fell below
                               options.grad_collapse_below */
} ns_halt;

typedef struct ns_session_options {
  uint32_t struct_size;    /* sizeof(ns_session_options) */
  const char* run_dir;     /* created if missing; run.h5 and dumps/ go there */
  const char* trainer;     /* the trainer's name: 1-63 printable characters without ',', not
                              "nanscope" */
  const char* config_text; /* the trainer's own config, recorded as-is (may be NULL) */
  int32_t folds;           /* folds the run plans (0: not known); recorded */
  uint64_t seed;           /* recorded */
  int32_t guard;       /* nonzero: the guard word says "skip" for a step in which a check fired */
  int32_t health;      /* nonzero: each checked slot's health per step (/steps/health) */
  int32_t capture;     /* nonzero: at the fold's first firing step, the buffers of the slots
                          that fired there are dumped (dumps/, one file per fold) */
  int32_t halt_on_nan; /* nonzero: a fire halts (ns_step_result.halt = NS_HALT_NAN) */
  double grad_collapse_below; /* > 0: halt_grad_collapse when the gradient-norm slot's first value
                                 is finite and below it (0: off) */
  int32_t overwrite;          /* nonzero: an existing run.h5 in run_dir may be replaced */
} ns_session_options;

typedef struct ns_slot_desc {
  uint32_t struct_size;  /* sizeof(ns_slot_desc) */
  const char* name;      /* 1-31 letters, digits, '_', '.', '-', not starting with '.' or '-';
                            unique in the session (it is part of its dump's file name) */
  const char* phase;     /* where the check runs, for people: "forward", "backward", ... */
  int32_t order;         /* dataflow order: 0 = finalised first in a step; the entry point of a
                            NaN is the fired slot of lowest order at the earliest firing step
                            (equal orders: the slot registered first) */
  const char* consumers; /* names of the slots that read this buffer within the step, comma
                            separated (may be NULL). They may name slots registered later, so
                            they are resolved when the first fold begins: ns_fold_begin then
                            refuses a name that is not registered, and registration stays open
                            until it succeeds */
  int64_t count;         /* elements */
  int32_t dtype;         /* ns_dtype */
  int32_t memory;        /* ns_memory */
  uint64_t address;      /* the buffer (a pointer as an integer); 0 for an absent slot or one
                            whose buffer comes later (ns_slot_set_address) */
  int32_t state;         /* ns_slot_state */
  int32_t role;          /* ns_slot_role */
  int32_t ndim;          /* 0: the buffer is 1-D [count]; 1-8: its shape is shape[0..ndim), whose
                            product is count (dumps and the workbench's inspector show it) */
  int64_t shape[8];
} ns_slot_desc;

/* Filled by ns_step_end and ns_step_replayed. A step captured into a CUDA graph has not run when
 * its ns_step_end returns: fired, first_fire and updated are -1 then, and each replay's result
 * comes from ns_step_replayed. */
typedef struct ns_step_result {
  uint32_t struct_size; /* sizeof(ns_step_result) */
  int32_t fired;        /* a check fired in this step */
  int32_t first_fire;   /* some slot fired for the first time in this fold */
  int32_t entry_slot;   /* the fold's entry point so far (-1 none) */
  int32_t entry_step;   /* its step (-1 none) */
  int32_t halt;         /* ns_halt */
  int32_t updated;      /* the guard allowed the update */
} ns_step_result;

/* Versions: the library's, and its ABI version (compare with NS_ABI_VERSION). */
NS_API void ns_version(int* major, int* minor, int* patch);
NS_API int ns_abi_version(void);

/* What the last call on this thread that failed said: every call clears it first, so after a
 * call that succeeded it is "". Valid until the thread's next call. */
NS_API const char* ns_last_error(void);

/* Sessions are independent (each its own slot table, flags, writer and files): any number, from
 * any threads, each on a run_dir of its own (another open session's is NS_ERR_STATE). */
NS_API ns_status ns_session_open(const ns_session_options* options, ns_session* out);
/* Writes what is left (the run file of a fold in progress), waits for the library's writer and
 * frees the session. The handle is invalid afterwards. */
NS_API ns_status ns_session_close(ns_session session);

/* Before the first fold: a slot (its id, from 0 in registration order, into *id). */
NS_API ns_status ns_slot_register(ns_session session, const ns_slot_desc* desc, int32_t* id);
/* Between steps: the buffer moved (or a deferred buffer exists now). */
NS_API ns_status ns_slot_set_address(ns_session session, int32_t slot, uint64_t address);
/* Between steps: a deferred slot is checked from now on (it needs its buffer first). */
NS_API ns_status ns_slot_undefer(ns_session session, int32_t slot);

/* Flags are sticky within a fold and reset at its boundary. Folds count from 0, in order. */
NS_API ns_status ns_fold_begin(ns_session session, int32_t fold);
NS_API ns_status ns_fold_end(ns_session session, int32_t fold);
/* Steps count from 0 within a fold, in order. `stream` is the CUDA stream (cudaStream_t) the
 * step's device checks run on: ns_step_begin and ns_check only enqueue kernels on it, so both may
 * be captured into the trainer's graph (NULL: the legacy default stream; ignored on the host
 * path). Registration, addresses, folds and ns_step_replayed are refused while it is capturing. */
NS_API ns_status ns_step_begin(ns_session session, int32_t step, void* stream);
/* Checks these slots now (their buffers as they are at this point of the step). All or nothing:
 * an id that is not registered, or a buffer that cannot be read, refuses the call and checks no
 * slot of the list. */
NS_API ns_status ns_check(ns_session session, const int32_t* slots, int32_t count, void* stream);
/* After the step: what its checks found. On the device path it waits for the step's stream (a
 * step being captured into a graph only ends its capture: see ns_step_result). */
NS_API ns_status ns_step_end(ns_session session, ns_step_result* result);
/* The device path with graphs: after launching a graph that holds one captured step (from
 * ns_step_begin to ns_step_end) on `stream`, outside any capture. Waits for the stream and accounts
 * for every replay since the last call as a step of the fold, in order: flags, entry point,
 * health, dumps and halts as ns_step_end gives them. *result is the last replay's, with fired,
 * first_fire and halt over all the replays it accounted (the first halt). Call it after each
 * replay, or at most 4096 replays apart (later replays share the 4096th's flags). ns_fold_end
 * accounts for replays not yet accounted. */
NS_API ns_status ns_step_replayed(ns_session session, void* stream, ns_step_result* result);

/* The guard: may the optimizer update in this step? (a fire so far and options.guard set: no).
 * For the host path, call it just before the update. */
NS_API ns_status ns_guard_allows_update(ns_session session, int32_t* allowed);
/* The guard word's address: a uint32 that is non-zero while the step must not update. Host memory
 * on the host path; on the device path (from the first ns_fold_begin on) it is device memory an
 * optimizer kernel reads on the step's stream after the checks that guard it; with options.guard
 * off, a word that stays 0. */
NS_API ns_status ns_guard_word(ns_session session, uint64_t* address);

#ifdef __cplusplus
}
#endif

#endif /* NANSCOPE_NANSCOPE_H */
