"""nanscope's SDK from Python through ctypes (docs/sdk.md, ABI 1): no build step.

    import nanscope.sdk as ns
    with ns.Session("runs/mine", trainer="my_trainer", guard=True) as s:
        x = s.slot("x", order=0, consumers="h", array=x_np)        # a numpy float32/float64 array
        ...
        for fold in range(folds):
            with s.fold(fold):
                for step in range(steps):
                    with s.step(step) as st:
                        s.check([x, h])                              # the buffers as they are now
                        if s.allows_update(): ...
                    st.result.entry_slot                               # after the step

numpy arrays (and CPU tensors) are checked on the host path, CUDA tensors of PyTorch on the device
path, by their data pointer, so a buffer must stay alive and in place (the same memory) while the
session checks it; a new one is given with Session.set_array. On the device path the steps and
checks run on a CUDA stream: pass stream="torch" (torch's current one) to step() and check(),
also inside `torch.cuda.graph` capture (the default, None, is the host path's); after each replay
of a captured step, Session.replayed() accounts for it:

    with torch.cuda.graph(g):
        with s.step(0, stream="torch"):   # captured: the result comes from replayed()
            ...; s.check([h, loss], stream="torch"); ...
    for step in range(steps):
        g.replay()
        r = s.replayed()

Every failing call raises nanscope.sdk.Error with the library's status and message.
"""
import ctypes
import ctypes.util
import os

NS_OK = 0
NS_ERR_STATE = 3
STATUS_NAMES = {0: "NS_OK", 1: "NS_ERR_ARGUMENT", 2: "NS_ERR_HANDLE", 3: "NS_ERR_STATE",
                4: "NS_ERR_SLOT", 5: "NS_ERR_MEMORY", 6: "NS_ERR_IO", 7: "NS_ERR_UNSUPPORTED",
                8: "NS_ERR_VERSION", 9: "NS_ERR_DEVICE", 10: "NS_ERR_OUT_OF_MEMORY",
                11: "NS_ERR_INTERNAL"}
NS_F32, NS_F64, NS_BF16, NS_F16 = 0, 1, 2, 3
DTYPES = {"float32": NS_F32, "float64": NS_F64, "bfloat16": NS_BF16, "float16": NS_F16}
DTYPE_NAMES = {code: name for name, code in DTYPES.items()}
NS_HOST, NS_DEVICE = 0, 1
NS_SLOT_CHECKED, NS_SLOT_ABSENT, NS_SLOT_DEFERRED = 0, 1, 2
ROLES = {None: 0, "loss": 1, "grad_norm": 2}
HALTS = {0: None, 1: "halt_nan", 2: "halt_grad_collapse"}


class Error(RuntimeError):
    """A call the library refused: `status` is its ns_status (`status_name` its name), the message
    its ns_last_error()."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = STATUS_NAMES.get(status, f"status {status}")
        super().__init__(f"{message} ({self.status_name})")


class _Session(ctypes.Structure):
    """ns_session: a struct of one uint64, passed by value."""
    _fields_ = [("id", ctypes.c_uint64)]


class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("run_dir", ctypes.c_char_p), ("trainer", ctypes.c_char_p),
                ("config_text", ctypes.c_char_p), ("folds", ctypes.c_int32),
                ("reserved1", ctypes.c_uint32), ("seed", ctypes.c_uint64),
                ("guard", ctypes.c_int32), ("health", ctypes.c_int32),
                ("capture", ctypes.c_int32), ("halt_on_nan", ctypes.c_int32),
                ("grad_collapse_below", ctypes.c_double), ("overwrite", ctypes.c_int32),
                ("reserved2", ctypes.c_uint32), ("watch_overflow_margin", ctypes.c_double),
                ("watch_underflow_share", ctypes.c_double),
                ("watch_loss_scale_floor", ctypes.c_double)]


class _SlotDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("name", ctypes.c_char_p), ("phase", ctypes.c_char_p),
                ("order", ctypes.c_int32), ("reserved1", ctypes.c_uint32),
                ("consumers", ctypes.c_char_p), ("count", ctypes.c_int64),
                ("dtype", ctypes.c_int32), ("memory", ctypes.c_int32),
                ("address", ctypes.c_uint64), ("state", ctypes.c_int32),
                ("role", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("reserved2", ctypes.c_uint32), ("shape", ctypes.c_int64 * 8)]


class StepResult(ctypes.Structure):
    """ns_step_result; `halt` is latched for the rest of the fold from `halt_step` on."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("fired", ctypes.c_int32),
                ("first_fire", ctypes.c_int32), ("entry_slot", ctypes.c_int32),
                ("entry_step", ctypes.c_int32), ("halt", ctypes.c_int32),
                ("updated", ctypes.c_int32), ("halt_step", ctypes.c_int32),
                ("replays", ctypes.c_int32)]

    def __init__(self):
        super().__init__()
        self.struct_size = ctypes.sizeof(StepResult)


def _library_path():
    """libnanscope beside this package (a copy shipped with it), else the linker's search."""
    beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libnanscope.so.1")
    if os.path.exists(beside):
        return beside
    return ctypes.util.find_library("nanscope") or "libnanscope.so.1"


def load(path=None):
    """The library: `path`, else $NANSCOPE_LIB, else one beside this package, else
    libnanscope.so.1 from the linker's path."""
    path = path or os.environ.get("NANSCOPE_LIB") or _library_path()
    lib = ctypes.CDLL(path)
    u64, i32, vp, ses = ctypes.c_uint64, ctypes.c_int32, ctypes.c_void_p, _Session
    sig = {
        "ns_session_open": [ctypes.POINTER(_Options), ctypes.POINTER(ses)],
        "ns_session_close": [ses],
        "ns_slot_register": [ses, ctypes.POINTER(_SlotDesc), ctypes.POINTER(i32)],
        "ns_slot_set_address": [ses, i32, u64],
        "ns_slot_undefer": [ses, i32],
        "ns_fold_begin": [ses, i32],
        "ns_fold_end": [ses, i32],
        "ns_step_begin": [ses, i32, vp],
        "ns_check": [ses, ctypes.POINTER(i32), i32, vp],
        "ns_step_end": [ses, ctypes.POINTER(StepResult)],
        "ns_guard_allows_update": [ses, ctypes.POINTER(i32)],
        "ns_guard_word": [ses, ctypes.POINTER(u64)],
        "ns_step_replayed": [ses, vp, ctypes.POINTER(StepResult)],
        "ns_writer_status": [ses, ctypes.POINTER(i32)],
        "ns_check_at": [ses, ctypes.POINTER(i32), ctypes.POINTER(u64), i32, vp],
        "ns_loss_scale": [ses, ctypes.c_double, i32],
    }
    for name, args in sig.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    lib.ns_last_error.restype = ctypes.c_char_p
    lib.ns_last_error.argtypes = []
    lib.ns_status_string.restype = ctypes.c_char_p
    lib.ns_status_string.argtypes = [ctypes.c_int]
    lib.ns_abi_version.restype = ctypes.c_int
    if lib.ns_abi_version() != 1:
        raise Error(8, f"{path}: ABI {lib.ns_abi_version()}, this module speaks ABI 1")
    return lib


def _text(s):
    return None if s is None else s.encode()


def _is_tensor(array):
    return hasattr(array, "data_ptr") and hasattr(array, "is_cuda")


def _address_and_type(array):
    """A buffer's data pointer, element count, ns_dtype, shape and ns_memory: a C-contiguous numpy
    array (host), or a contiguous PyTorch tensor (a CUDA one on the device path)."""
    if _is_tensor(array):
        import torch
        if not array.is_contiguous():
            raise ValueError("a slot's tensor must be contiguous (.contiguous())")
        dtypes = {torch.float32: NS_F32, torch.float64: NS_F64, torch.bfloat16: NS_BF16,
                  torch.float16: NS_F16}
        if array.dtype not in dtypes:
            raise TypeError(f"a slot's tensor is float32, float64, bfloat16 or float16, not "
                            f"{array.dtype}")
        return (array.data_ptr(), array.numel(), dtypes[array.dtype], tuple(array.shape),
                NS_DEVICE if array.is_cuda else NS_HOST)
    import numpy as np
    if not isinstance(array, np.ndarray):
        raise TypeError("a slot's buffer is a numpy array or a PyTorch tensor")
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("a slot's array must be C-contiguous (np.ascontiguousarray)")
    dtypes = {np.dtype(np.float32): NS_F32, np.dtype(np.float64): NS_F64,
              np.dtype(np.float16): NS_F16}
    if array.dtype not in dtypes:
        raise TypeError(f"a slot's array is float32, float64 or float16, not {array.dtype}")
    return array.ctypes.data, array.size, dtypes[array.dtype], array.shape, NS_HOST


def current_stream():
    """torch's current CUDA stream as the library takes it (None without a device path)."""
    import torch
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


class _DeviceWord:
    """A uint32 of device memory as a 1-element int32 tensor (torch.as_tensor(word, device=...))."""

    def __init__(self, address):
        self.__cuda_array_interface__ = {"shape": (1,), "typestr": "<i4",
                                         "data": (address, False), "version": 3}


class _Scope:
    def __init__(self, enter, leave):
        self._enter, self._leave = enter, leave
        self.result = None

    def __enter__(self):
        self._enter()
        return self

    def __exit__(self, kind, value, tb):
        out = self._leave()
        if kind is None:
            self.result = out
        return False


class Session:
    """One run of a trainer (ns_session_open ... ns_session_close)."""

    def __init__(self, run_dir, trainer, config_text=None, folds=0, seed=0, guard=True,
                 health=True, capture=True, halt_on_nan=False, grad_collapse_below=0.0,
                 overwrite=False, lib=None, overflow_margin=0.0, underflow_share=0.0,
                 loss_scale_floor=0.0):
        """`lib`: a library from load(path); load() by default. The watches (0: off; docs/sdk.md,
        "Watches"): `overflow_margin` a factor >= 1, `underflow_share` a fraction,
        `loss_scale_floor` a scale."""
        self.handle = _Session(0)
        self._lib = lib or load()
        self._arrays = {}  # keeps each registered array alive while it is checked
        self._layouts = {}  # each slot's element count and ns_dtype, as registered
        o = _Options(struct_size=ctypes.sizeof(_Options), run_dir=_text(str(run_dir)),
                     trainer=_text(trainer), config_text=_text(config_text), folds=folds,
                     seed=seed, guard=guard, health=health, capture=capture,
                     halt_on_nan=halt_on_nan, grad_collapse_below=grad_collapse_below,
                     overwrite=overwrite, watch_overflow_margin=overflow_margin,
                     watch_underflow_share=underflow_share,
                     watch_loss_scale_floor=loss_scale_floor)
        handle = _Session(0)
        self._call("ns_session_open", ctypes.byref(o), ctypes.byref(handle))
        self.handle = handle

    def _call(self, name, *args):
        status = getattr(self._lib, name)(*args)
        if status != NS_OK:
            raise Error(status, self._lib.ns_last_error().decode(errors="replace"))

    def slot(self, name, order, array=None, phase="step", consumers=None, absent=False,
             deferred=False, role=None, shape=None, dtype="float32", device=False):
        """Registers a slot (before the first fold) and returns its id. `role`: None, "loss" or
        "grad_norm" (its element 0 is the run's loss or gradient norm in the metrics). A deferred
        slot whose buffer comes later (set_array) is given its `shape`, `dtype` (a name of DTYPES)
        and `device` instead of an array. The binding's own checks of its arguments
        raise TypeError or ValueError; the library's refusals raise Error."""
        if role not in ROLES:
            raise ValueError(f"slot {name}: role {role!r} is not one of {list(ROLES)}")
        if array is not None:
            address, count, dtype, shape, memory = _address_and_type(array)
        elif deferred:
            if shape is None:
                raise ValueError(f"slot {name}: a deferred slot without an array needs its shape")
            if dtype not in DTYPES:
                raise TypeError(f"slot {name}: dtype {dtype!r} is not one of {list(DTYPES)}")
            shape = tuple(int(n) for n in shape)
            count = 1
            for n in shape:
                count *= n
            address, dtype, memory = 0, DTYPES[dtype], NS_DEVICE if device else NS_HOST
        else:
            address, count, dtype, shape, memory = 0, 0, NS_F32, (), NS_HOST
        if len(shape) > 8:
            raise ValueError(f"slot {name}: an array of {len(shape)} dimensions (8 at most)")
        state = NS_SLOT_ABSENT if absent else NS_SLOT_DEFERRED if deferred else NS_SLOT_CHECKED
        d = _SlotDesc(struct_size=ctypes.sizeof(_SlotDesc), name=_text(name), phase=_text(phase),
                      order=order, consumers=_text(consumers), count=count, dtype=dtype,
                      memory=memory, address=address, state=state, role=ROLES[role],
                      ndim=len(shape), shape=(ctypes.c_int64 * 8)(*shape))
        sid = ctypes.c_int32(-1)
        self._call("ns_slot_register", self.handle, ctypes.byref(d), ctypes.byref(sid))
        self._arrays[sid.value] = array
        self._layouts[sid.value] = (count, dtype)
        return sid.value

    def set_array(self, slot, array):
        """Between steps: the slot's buffer is now `array`, of the size and dtype the slot was
        registered with."""
        address, count, dtype, _, _ = _address_and_type(array)
        if slot in self._layouts and self._layouts[slot] != (count, dtype):
            want_count, want_dtype = self._layouts[slot]
            raise ValueError(f"slot {slot}: a buffer of {count} {DTYPE_NAMES[dtype]} for a slot "
                             f"of {want_count} {DTYPE_NAMES[want_dtype]}")
        self._call("ns_slot_set_address", self.handle, slot, address)
        self._arrays[slot] = array

    def undefer(self, slot):
        self._call("ns_slot_undefer", self.handle, slot)

    def fold(self, fold):
        return _Scope(lambda: self._call("ns_fold_begin", self.handle, fold),
                      lambda: self._call("ns_fold_end", self.handle, fold))

    def _stream(self, stream):
        """The stream argument: None is the host path, "torch" torch's current stream, else a
        cudaStream_t as an int (torch.cuda.Stream.cuda_stream)."""
        if stream == "torch":
            return current_stream()
        return ctypes.c_void_p(stream)

    def step(self, step, stream=None):
        """A step; `stream` as in check(). Inside a graph capture, the result says fired = -1
        (the step has not run): replayed() gives each replay's."""
        def end():
            r = StepResult()
            self._call("ns_step_end", self.handle, ctypes.byref(r))
            return r
        return _Scope(lambda: self._call("ns_step_begin", self.handle, step,
                                         self._stream(stream)), end)

    def check(self, slots, stream=None):
        """Checks these slots now. Device slots: on `stream` ("torch": torch's current stream; it
        must be the step's)."""
        ids = (ctypes.c_int32 * len(slots))(*slots)
        self._call("ns_check", self.handle, ids, len(slots), self._stream(stream))

    def check_at(self, slots, arrays, stream=None):
        """Checks these slots now in these arrays (this step's tensors: each of its slot's size,
        dtype and memory), leaving the slots' registered buffers as they were (ns_check_at)."""
        if len(slots) != len(arrays):
            raise ValueError(f"{len(slots)} slots and {len(arrays)} arrays")
        ids = (ctypes.c_int32 * len(slots))(*slots)
        addresses = (ctypes.c_uint64 * len(arrays))()
        for i, (slot, array) in enumerate(zip(slots, arrays)):
            address, count, dtype, _, _ = _address_and_type(array)
            if slot in self._layouts and self._layouts[slot] != (count, dtype):
                raise ValueError(f"slot {slot}: an array of {count} elements of type {dtype} for a "
                                 f"slot of {self._layouts[slot][0]} of type {self._layouts[slot][1]}")
            addresses[i] = address
        self._call("ns_check_at", self.handle, ids, addresses, len(slots), self._stream(stream))

    def replayed(self, stream="torch"):
        """After a replay of a graph holding one captured step: its result (ns_step_replayed)."""
        r = StepResult()
        self._call("ns_step_replayed", self.handle, self._stream(stream), ctypes.byref(r))
        return r

    def loss_scale(self, scale, skipped=False):
        """In a step: the trainer's loss scale and whether its scaler skipped this step's update
        (ns_loss_scale)."""
        self._call("ns_loss_scale", self.handle, float(scale), 1 if skipped else 0)

    def allows_update(self):
        allowed = ctypes.c_int32(0)
        self._call("ns_guard_allows_update", self.handle, ctypes.byref(allowed))
        return bool(allowed.value)

    def guard_word(self):
        """The guard word's address (device memory on the device path: see guard_tensor)."""
        address = ctypes.c_uint64(0)
        self._call("ns_guard_word", self.handle, ctypes.byref(address))
        return address.value

    def guard_tensor(self):
        """The device path's guard word as a 1-element int32 CUDA tensor (non-zero: skip the
        update), for an optimizer that runs inside a captured graph."""
        import torch
        return torch.as_tensor(_DeviceWord(self.guard_word()), device="cuda")

    def writer_status(self):
        """The library's writer: the writes not yet done; raises Error (NS_ERR_IO, naming the
        file) for a write that failed since it was last asked."""
        pending = ctypes.c_int32(0)
        self._call("ns_writer_status", self.handle, ctypes.byref(pending))
        return pending.value

    def close(self):
        """Closes the session. The session is gone whatever the library says, except while a
        CUDA capture of its stream is under way (NS_ERR_STATE): then it stays open."""
        if self.handle.id:
            status = self._lib.ns_session_close(self.handle)
            if status != NS_ERR_STATE:
                self.handle = _Session(0)
            if status != NS_OK:
                raise Error(status, self._lib.ns_last_error().decode(errors="replace"))

    def __del__(self):  # a session dropped without close() is closed, so another can open
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        self.close()
        return False


def report_fold(fold, loss, entry):
    """The examples' line for a fold: its last loss and its entry point ((slot, step) or None)."""
    print(f"fold {fold}: loss {loss:.5f}, " +
          (f"entry slot {entry[0]} at step {entry[1]}" if entry else "clean"))


def run_trainer(main, name):
    """Exits with main()'s status, or 1 with the library's message when a call was refused."""
    import sys
    try:
        sys.exit(main())
    except Error as e:
        print(f"{name}: {e}", file=sys.stderr)
        sys.exit(1)
