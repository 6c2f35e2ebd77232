/* nanscope SDK: NaN sentinels for any trainer (docs/sdk.md).
 *
 * A trainer registers its buffers as slots, checks them each step, and gets nanscope's fold flags,
 * entry point, guard word, slot health, halts, first-fire dumps and run file, which the
 * `nanscope` workbench and `nanscope-run` open like their own.
 *
 * C99, usable from C++, Rust (extern "C") and Python (ctypes); LP64 platforms (Linux on x86-64 and
 * aarch64). The contract, which docs/sdk.md explains:
 *
 * - Statuses. Every call returns an ns_status except the four that cannot fail (ns_version,
 *   ns_abi_version, ns_last_error, ns_status_string). A call that returns a status first clears
 *   ns_last_error() on its thread, and a refused call changes nothing (ns_session_close excepted:
 *   it frees the session whatever it returns, but during a capture). When several problems
 *   apply, they are judged in this order: the handle (NS_ERR_HANDLE); a NULL output pointer or
 *   struct, and a struct's size (NS_ERR_ARGUMENT, NS_ERR_VERSION); the state (NS_ERR_STATE); then
 *   the other arguments.
 * - Struct sizes: a struct_size is a whole number of the struct's alignment, at most 4096.
 * - Ownership. The library copies every string and struct it is given before the call returns;
 *   the caller may free or reuse them at once. Strings it returns (ns_last_error,
 *   ns_status_string) are its own: never free them.
 * - Lifetimes. A buffer's address is read at each ns_check (host buffers are copied through the
 *   kernel, device buffers read in place), so the buffer must stay valid while its slot has that
 *   address: give the new one with ns_slot_set_address. The guard word's address is valid until
 *   ns_session_close and is the same in every fold.
 * - Threads. A session's calls may come from any thread, one at a time (the library serialises
 *   them with a per-session lock); sessions are independent, any number per process, each on a
 *   run_dir of its own. ns_last_error is per thread. The library writes files on a thread of its
 *   own per session (ns_writer_status).
 * - States. open -> register slots -> folds 0, 1, ... (each: steps 0, 1, ...) -> close. Which call
 *   is allowed when is written at each call; a call at another time is NS_ERR_STATE.
 * - Structs carry struct_size (set it to sizeof, or use the NS_..._INIT initialisers). A size at
 *   least ABI 1's is accepted: fields a smaller (older) struct lacks read as zero, and results are
 *   written up to the smaller of the caller's size and the library's. A larger (newer) struct is
 *   accepted when the fields this library does not know are zero. Fields are only appended;
 *   reserved fields must be zero.
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

/* The version this header belongs to; ns_version() gives the library's. These lines are the one
 * source of the version numbers: the build reads them (the package's version, the library's
 * soname libnanscope.so.NS_ABI_VERSION and its symbol version node NANSCOPE_<NS_ABI_VERSION>). The
 * ABI version changes only when a call or a struct's existing fields change meaning (docs/sdk.md,
 * "ABI policy"). */
#define NS_VERSION_MAJOR 0
#define NS_VERSION_MINOR 2
#define NS_VERSION_PATCH 0
#define NS_ABI_VERSION 1

#if defined(_WIN32)
#error "nanscope's SDK is built for Linux (LP64) only"
#endif
#define NS_API __attribute__((visibility("default")))

typedef enum ns_status {
  NS_OK = 0,
  NS_ERR_ARGUMENT = 1,       /* a null, out-of-range or inconsistent argument */
  NS_ERR_HANDLE = 2,         /* a session handle that is not open (closed, never opened, made up) */
  NS_ERR_STATE = 3,          /* a call at the wrong time (a step outside a fold, registration after
                                the first fold began, a second session on an open one's run_dir, a
                                call a CUDA capture under way would break); a fold or step number
                                other than the next one is NS_ERR_ARGUMENT */
  NS_ERR_SLOT = 4,           /* a slot id that is not registered, or a slot in the wrong state */
  NS_ERR_MEMORY = 5,         /* a buffer that cannot be read where it was said to be (unmapped,
                                protected, a count past its mapping, misaligned, the wrong memory) */
  NS_ERR_IO = 6,             /* the run directory or a file could not be written (disk full...) */
  NS_ERR_UNSUPPORTED = 7,    /* something this library does not do (a device buffer without the
                                CUDA plugin, an element type it does not check, a limit passed) */
  NS_ERR_VERSION = 8,        /* a struct_size smaller than ABI 1's, or larger with fields set in
                                the part this library does not know; an ABI ns_get_api lacks */
  NS_ERR_DEVICE = 9,         /* CUDA refused a call the device path made (the message has CUDA's
                                error); the session stays usable where CUDA does */
  NS_ERR_OUT_OF_MEMORY = 10, /* the library could not allocate what the call needs (the message
                                says how much and for which slot); nothing changed */
  NS_ERR_INTERNAL = 11,      /* a defect of the library (the message says where): please report
                                it; the session refuses nothing else because of it */
  NS_STATUS_FORCE_32BIT = 0x7fffffff /* keeps ns_status 32 bits wide under -fshort-enums */
} ns_status;

/* A session: one trainer's run. A struct, so that neither an address nor an integer passes for
 * one; by value it is one 64-bit integer (ctypes: a Structure of one c_uint64; Rust: a
 * #[repr(C)] struct of one u64). id 0 is never a session. */
typedef struct ns_session {
  uint64_t id;
} ns_session;

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

/* ns_session_open's input (copied; strings too). Zero is every field's default. */
typedef struct ns_session_options {
  uint32_t struct_size;    /* sizeof(ns_session_options) */
  uint32_t reserved0;      /* 0 */
  const char* run_dir;     /* created if missing; run.h5 and dumps/ go there */
  const char* trainer;     /* the trainer's name: 1-63 printable ASCII characters without ',',
                              not "nanscope" */
  const char* config_text; /* the trainer's own config, recorded as-is (may be NULL) */
  int32_t folds;           /* folds the run plans (0: not known); a fold past them is refused */
  uint32_t reserved1;      /* 0 */
  uint64_t seed;           /* recorded */
  int32_t guard;       /* nonzero: the guard word says "skip" for a step in which a check fired */
  int32_t health;      /* nonzero: each checked slot's health per step (/steps/health) */
  int32_t capture;     /* nonzero: at the fold's first firing step, the buffers of the slots
                          that fired there are dumped (dumps/, one file per fold) */
  int32_t halt_on_nan; /* nonzero: a fire halts (ns_step_result.halt = NS_HALT_NAN) */
  double grad_collapse_below; /* > 0: halt_grad_collapse when the gradient-norm slot's first value
                                 is finite and below it (0: off) */
  int32_t overwrite;          /* nonzero: an existing run in run_dir (run.h5 and the dumps it
                                 names, dumps/fold*.h5) is removed when the session opens */
  uint32_t reserved2;         /* 0 */
  /* Appended after ABI 1's first header: watches, each 0 for off (a trip is a warning, an event
   * of the run file, never a fire; once per fold and slot). The first two read slot health, so
   * they need options.health. */
  double watch_overflow_margin;  /* >= 1: a slot's largest finite |value| within this factor of
                                    its type's largest finite value (float16: 65504) */
  double watch_underflow_share;  /* 0-1: the fraction of a slot's values that are non-zero and
                                    below its type's smallest normal above this */
  double watch_loss_scale_floor; /* > 0: the loss scale ns_loss_scale reports below this */
} ns_session_options;

#define NS_SESSION_OPTIONS_INIT                                                                \
  {                                                                                            \
    (uint32_t)sizeof(ns_session_options), 0, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0.0, 0, 0, \
        0.0, 0.0, 0.0                                                                          \
  }

/* ns_slot_register's input (copied; strings too). */
typedef struct ns_slot_desc {
  uint32_t struct_size;  /* sizeof(ns_slot_desc) */
  uint32_t reserved0;    /* 0 */
  const char* name;      /* 1-127 letters, digits, '_', '.', '-', ':', '#', not starting with
                            '.', '-', ':' or '#', without "..": a module path reads as itself;
                            unique in the session (it is part of its dump's file name) */
  const char* phase;     /* where the check runs, for people: "forward", "backward", ...; at most
                            31 bytes (NULL or "": "step") */
  int32_t order;         /* dataflow order, >= 0: 0 = finalised first in a step; the entry point
                            of a NaN is the fired slot of lowest order at the earliest firing step
                            (equal orders: the slot registered first) */
  uint32_t reserved1;    /* 0 */
  const char* consumers; /* names of the slots that read this buffer within the step, comma
                            separated (may be NULL). They may name slots registered later, so
                            they are resolved when the first fold begins: ns_fold_begin then
                            refuses a name that is not registered, and registration stays open
                            until it succeeds */
  int64_t count;         /* elements: 1 to 2^40 (device buffers: below 2^31); 0 when absent */
  int32_t dtype;         /* ns_dtype */
  int32_t memory;        /* ns_memory */
  uint64_t address;      /* the buffer (a pointer as an integer), aligned to its elements; 0 for an
                            absent slot or one whose buffer comes later (ns_slot_set_address) */
  int32_t state;         /* ns_slot_state */
  int32_t role;          /* ns_slot_role */
  int32_t ndim;          /* 0: the buffer is 1-D [count]; 1-8: its shape is shape[0..ndim), whose
                            product is count (dumps and the workbench's inspector show it) */
  uint32_t reserved2;    /* 0 */
  int64_t shape[8];
} ns_slot_desc;

#define NS_SLOT_DESC_INIT                                                                \
  {                                                                                      \
    (uint32_t)sizeof(ns_slot_desc), 0, NULL, NULL, 0, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, { \
      0, 0, 0, 0, 0, 0, 0, 0                                                             \
    }                                                                                    \
  }

/* In and out: the caller sets struct_size (NS_STEP_RESULT_INIT), ns_step_end and
 * ns_step_replayed fill the rest, up to the smaller of the caller's size and the library's.
 * A NULL result is allowed: the step ends and nothing is written. A step captured into a CUDA
 * graph has not run when its ns_step_end returns: fired, first_fire and updated are -1, replays is
 * 0, and each replay's result comes from ns_step_replayed. */
typedef struct ns_step_result {
  uint32_t struct_size; /* sizeof(ns_step_result) */
  int32_t fired;        /* a check fired in this step */
  int32_t first_fire;   /* some slot fired for the first time in this fold */
  int32_t entry_slot;   /* the fold's entry point so far (-1 none) */
  int32_t entry_step;   /* its step (-1 none) */
  int32_t halt;         /* ns_halt: the fold's halt, latched: set from the step that halted to
                           the fold's end (a step after a halt runs and is checked as any other) */
  int32_t updated;      /* the guard allowed the update */
  /* Appended after ABI 1's first header (a caller's struct without them is written up to
   * `updated`): */
  int32_t halt_step; /* the step the fold halted at (-1 none) */
  int32_t replays;   /* the steps this result accounts: 1 for a step run by ns_step_end, 0 for a
                        captured one, the replays accounted by ns_step_replayed */
} ns_step_result;

#define NS_STEP_RESULT_INIT \
  { (uint32_t)sizeof(ns_step_result), 0, 0, 0, 0, 0, 0, 0, 0 }

/* Versions: the library's, and its ABI version (compare with NS_ABI_VERSION). Any time, any
 * thread; NULL arguments are skipped. */
NS_API void ns_version(int* major, int* minor, int* patch);
NS_API int ns_abi_version(void);

/* What the last call on this thread that returned a status other than NS_OK said; "" after one
 * that succeeded (each such call clears it first). The library's string: valid until the thread's
 * next call into the library. */
NS_API const char* ns_last_error(void);
/* A status's name and meaning ("NS_ERR_SLOT: ..."), a static string; never NULL. It takes any
 * int32_t (a value that is no ns_status gets "not an ns_status"). */
NS_API const char* ns_status_string(int32_t status);

/* Any time. Opens a session (its handle into *out; *out is {0} on failure). */
NS_API ns_status ns_session_open(const ns_session_options* options, ns_session* out);
/* Any time but during a CUDA capture of the session's stream (NS_ERR_STATE, and the session and
 * the capture stay usable). Ends a step in progress, writes what is left (the run file of a fold
 * in progress), waits for the library's writer and frees the session, even when it returns an
 * error (a write that failed, a device fault): the handle is invalid afterwards either way. */
NS_API ns_status ns_session_close(ns_session session);

/* Before the first fold: a slot (its id, from 0 in registration order, into *id; -1 on failure).
 * A host buffer's range is checked against the process's mappings at once (a count past its
 * mapping is NS_ERR_MEMORY naming the slot); at most 4,096 slots. */
NS_API ns_status ns_slot_register(ns_session session, const ns_slot_desc* desc, int32_t* id);
/* Before the first fold or between steps (not during a capture): the buffer moved, or a deferred
 * slot's buffer exists now. */
NS_API ns_status ns_slot_set_address(ns_session session, int32_t slot, uint64_t address);
/* Before the first fold or between steps (not during a capture): a deferred slot is checked from
 * now on (it needs its buffer first). */
NS_API ns_status ns_slot_undefer(ns_session session, int32_t slot);

/* Flags are sticky within a fold and reset at its boundary. Folds count from 0, in order (below
 * options.folds when it is set); not during a capture. The first ns_fold_begin fixes the table. */
NS_API ns_status ns_fold_begin(ns_session session, int32_t fold);
NS_API ns_status ns_fold_end(ns_session session, int32_t fold);
/* In a fold. Steps count from 0 within a fold, in order. `stream` is the CUDA stream
 * (cudaStream_t) the step's device checks run on: ns_step_begin and ns_check only enqueue kernels
 * on it, so both may be captured into the trainer's graph, and the capture is not a step of its
 * own (NULL: the legacy default stream; ignored on the host path). */
NS_API ns_status ns_step_begin(ns_session session, int32_t step, void* stream);
/* In a step. Checks these slots now (their buffers as they are at this point of the step); an
 * absent or deferred slot in the list takes its place and checks nothing. At most 262,144 ids
 * (an id may repeat). All or nothing: an id that is not registered, or a buffer that cannot be
 * read, refuses the call and checks no slot of the list. */
NS_API ns_status ns_check(ns_session session, const int32_t* slots, int32_t count, void* stream);
/* In a step. As ns_check, but slots[i] is checked in the buffer at addresses[i] (this step's,
 * of the slot's count, type and memory), and its registered address stays as it was: for an
 * eager framework whose tensors move every step (PyTorch), without registering them again. Each
 * address is checked as a registration's is (device ones against the device's allocations); a slot
 * listed twice must be given one buffer. (Appended to ABI 1 after its first header.) */
NS_API ns_status ns_check_at(ns_session session, const int32_t* slots, const uint64_t* addresses,
                             int32_t count, void* stream);
/* In a step. After the step: what its checks found (result may be NULL). On the device path it
 * waits for the step's stream; a step being captured into a graph only ends its capture (see
 * ns_step_result). */
NS_API ns_status ns_step_end(ns_session session, ns_step_result* result);
/* In a fold, on the device path with graphs, outside any capture: after launching a graph that
 * holds one captured step (ns_step_begin to ns_step_end) on `stream`. Waits for the stream and
 * accounts for every replay since the last call as a step of the fold, in order: flags, entry
 * point, health, dumps and halts as ns_step_end gives them. *result (may be NULL) is the last
 * replay's, with fired and first_fire over all the replays it accounted. Call it after each replay,
 * or at most 4096 replays apart (later replays share the 4096th's flags). One graph may be replayed
 * in later folds. ns_fold_end accounts for replays not yet accounted. */
NS_API ns_status ns_step_replayed(ns_session session, void* stream, ns_step_result* result);

/* In a step, outside a capture (after the scaler's update; a step captured into a graph cannot
 * report one). The trainer's loss scale at this step (finite and > 0; the run file's
 * /steps/loss_scale, a series of the workbench's metrics plot) and whether its loss scaler skipped
 * this step's update because gradients overflowed (nonzero): a skipped step is an event
 * (loss_scale_skip) naming the first slot, in dataflow order, that held an Inf or NaN in the step.
 * options.watch_loss_scale_floor trips when the scale falls below it. (Appended to ABI 1 after its
 * first header.) */
NS_API ns_status ns_loss_scale(ns_session session, double scale, int32_t skipped);

/* In a step (on the device path: not a captured one): may the optimizer update in this step? (a
 * fire so far and options.guard set: no). For the host path, call it just before the update. */
NS_API ns_status ns_guard_allows_update(ns_session session, int32_t* allowed);
/* The guard word's address: a uint32 the trainer only reads, non-zero while the step must not
 * update. Host memory on the host path; on the device path (from the first ns_fold_begin on) it is
 * device memory an optimizer kernel reads on the step's stream after the checks that guard it.
 * With options.guard off, a word that stays 0. The same address until ns_session_close. */
NS_API ns_status ns_guard_word(ns_session session, uint64_t* address);

/* Any time. The library's writer (the run file and the dumps, written on its own thread): into
 * *pending (may be NULL), the writes handed over and not yet done. Returns NS_ERR_IO, naming the
 * file, for a write that failed since the last ns_writer_status; each failure is reported once,
 * here or (if never asked) by ns_session_close, and by no other call. A failed write leaves the
 * previous complete file. */
NS_API ns_status ns_writer_status(ns_session session, int32_t* pending);

/* The calls of ABI 1 as a table, for a trainer that makes nanscope optional: one dlopen of
 * "libnanscope.so.1", one dlsym of "ns_get_api" (as an ns_get_api_fn). Calls are only appended;
 * struct_size is the library's table's size, so a caller sees whether a later call is there. */
typedef struct ns_api_1 {
  uint32_t struct_size;
  int32_t abi_version; /* 1 */
  void (*version)(int* major, int* minor, int* patch);
  const char* (*last_error)(void);
  const char* (*status_string)(int32_t status);
  ns_status (*session_open)(const ns_session_options* options, ns_session* out);
  ns_status (*session_close)(ns_session session);
  ns_status (*slot_register)(ns_session session, const ns_slot_desc* desc, int32_t* id);
  ns_status (*slot_set_address)(ns_session session, int32_t slot, uint64_t address);
  ns_status (*slot_undefer)(ns_session session, int32_t slot);
  ns_status (*fold_begin)(ns_session session, int32_t fold);
  ns_status (*fold_end)(ns_session session, int32_t fold);
  ns_status (*step_begin)(ns_session session, int32_t step, void* stream);
  ns_status (*check)(ns_session session, const int32_t* slots, int32_t count, void* stream);
  ns_status (*step_end)(ns_session session, ns_step_result* result);
  ns_status (*step_replayed)(ns_session session, void* stream, ns_step_result* result);
  ns_status (*guard_allows_update)(ns_session session, int32_t* allowed);
  ns_status (*guard_word)(ns_session session, uint64_t* address);
  ns_status (*writer_status)(ns_session session, int32_t* pending);
  /* Appended after ABI 1's first header (struct_size says whether a library has them): */
  ns_status (*check_at)(ns_session session, const int32_t* slots, const uint64_t* addresses,
                        int32_t count, void* stream);
  ns_status (*loss_scale)(ns_session session, double scale, int32_t skipped);
} ns_api_1;

/* Any time: *table is the library's table of ABI `abi_version` (static: never free it), or NULL
 * with NS_ERR_VERSION when the library has no such ABI. */
NS_API ns_status ns_get_api(int32_t abi_version, const ns_api_1** table);
typedef ns_status (*ns_get_api_fn)(int32_t abi_version, const ns_api_1** table);

#ifdef __cplusplus
}
#endif

#endif /* NANSCOPE_NANSCOPE_H */
