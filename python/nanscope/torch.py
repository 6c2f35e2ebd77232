"""nanscope for PyTorch: every module of a model watched, named by its path (docs/torch.md).

    import nanscope.torch
    with nanscope.torch.watch(model, optimizer, run_dir="runs/gpt") as w:
        for fold in range(folds):
            with w.fold(fold):
                for step in range(steps):
                    with w.step():
                        loss = loss_fn(model(x), y); loss.backward(); optimizer.step()

What is watched, in the step's execution order (the slot's order, so the entry point is the first
tensor to go non-finite in the step):
- each module's floating-point outputs, named by the module's path (`blocks.3.attn.out`; the
  model itself is `model`; a module called twice in a step: `path#1`; several outputs: `path.0`);
- the loss: the tensor `.backward()` is called on, `loss`;
- the gradient of each module output as the backward produces it (`grad:blocks.3.attn.out`) and
  of each parameter (`grad:blocks.3.mlp.fc1.weight`);
- after the optimizer's update: Adam's moments (`adam.exp_avg:<param>`, `adam.exp_avg_sq:<param>`)
  and the parameters (`param:<param>`).
`include=` and `exclude=` take globs of these names (fnmatch).

The first step of the run finds the tensors (their names, shapes and order): it keeps a copy of
each as its hook saw it, registers the slots, begins the fold and checks the copies, before the
optimizer's update; every later step checks each tensor where it is when its hook runs
(ns_check_at: eager tensors move every step). Shapes are the run's: a tensor whose shape changes
is refused, naming it.

The guard: optimizer.step() is skipped in a step where anything fired (with guard=True, the
default), as GradScaler skips a step with an infinite gradient.

bfloat16 and float16 tensors (torch.autocast, a model in half precision) are checked in their own
type, with their margin to overflow and their share of subnormal values in the slot health. With
`scaler=` a GradScaler's scale is recorded at each eager step (after `scaler.update()` inside the
step) and a step it skipped is an event naming the first slot that overflowed.

Eager steps run on the CPU (the host path) or a CUDA device (each check a kernel on torch's
current stream). A step captured by torch.cuda.graph holds its checks as kernels of the graph, at
the addresses the graph's memory pool gives its tensors; each replay is a step of the fold, which
`w.replayed()` accounts after `graph.replay()`:

    with w.fold(0):
        for step in range(3):                      # eager: the table, and torch's warm-up
            with w.step():
                train_step()
        graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph), w.step():    # captured: the step begins inside the capture
            train_step()
        for step in range(3, steps):
            load_batch_into_static_inputs(step)
            graph.replay()
            w.replayed()                           # this replay's result: w.result

In a captured step the guard cannot skip optimizer.step() from Python: the update runs, and the
parameters and the optimizer's state tensors are put back as they were where the device guard word
says a check fired (torch.where), inside the graph. A torch.compile'd model is refused with what to
do instead.
"""
import fnmatch
import re
import types

import torch

from . import sdk

# torch.Tensor.backward as torch has it, and the watches open: one patch serves them all, made
# when the first opens and undone when the last closes, whatever their order.
_original_backward = None
_open_watches = []


def _patched_backward(tensor, *args, **kwargs):
    for w in list(_open_watches):
        w._seen_loss(tensor)
    return _original_backward(tensor, *args, **kwargs)


_HALVES = (torch.bfloat16, torch.float16)


def _checkable(t):
    """A tensor the watch checks: float32, bfloat16 and float16 anywhere (each in its own type),
    float64 in host memory (the library checks float64 on the host path only)."""
    return t.dtype == torch.float32 or t.dtype in _HALVES or (t.dtype == torch.float64
                                                              and not t.is_cuda)


class Refused(RuntimeError):
    """A tensor the watch cannot check as the run registered it (its shape or type changed)."""


class _Slot:
    __slots__ = ("name", "id", "shape", "torch_shape", "dtype", "device", "id_array")

    def __init__(self, name, shape, dtype, device):
        self.name, self.id, self.shape, self.dtype, self.device = name, -1, shape, dtype, device
        self.torch_shape = torch.Size(shape)
        self.id_array = None  # a one-id ctypes array, made once the id is known


class Watch:
    """The watch of one model (and its optimizer): see the module's docstring."""

    def __init__(self, model, optimizer=None, run_dir="runs/torch", trainer="torch", guard=True,
                 health=True, capture=True, halt_on_nan=False, include=None, exclude=None,
                 overwrite=True, folds=0, seed=0, config_text=None, lib=None, scaler=None,
                 overflow_margin=0.0, underflow_share=0.0, loss_scale_floor=0.0):
        if hasattr(model, "_orig_mod"):
            raise Refused("nanscope.torch: a torch.compile'd model: its hooks would not run as its "
                          "modules do. Watch the model itself (watch(model._orig_mod, ...)), which "
                          "runs eagerly, to find the NaN")
        self.model, self.optimizer = model, optimizer
        self._include = list(include) if include else None
        self._exclude = list(exclude or [])
        self._guard_on = guard
        self._session = sdk.Session(run_dir, trainer=trainer, config_text=config_text, folds=folds,
                                    seed=seed, guard=guard, health=health, capture=capture,
                                    halt_on_nan=halt_on_nan, overwrite=overwrite, lib=lib,
                                    overflow_margin=overflow_margin,
                                    underflow_share=underflow_share,
                                    loss_scale_floor=loss_scale_floor)
        # A torch.cuda.amp.GradScaler: its scale is read at each eager step's end, and a step
        # whose update() lowered it is one it skipped (GradScaler backs off only on an overflow).
        self._scaler = scaler
        self._scale_before = None
        self._slots = {}     # name -> _Slot, in registration (execution) order
        self._found = []     # the first step's (name, copy) in execution order
        self._found_names = set()
        self._registered = False
        self._fold = None
        self._fold_begun = False
        self._step = -1
        self._next_step = 0
        self._in_step = False
        self._step_captured = False  # the step in progress is being captured into a CUDA graph
        self._stream_arg = None      # the step's stream as the library takes it (None: host)
        self._step_stream = None     # ... and as torch has it (on the device)
        self._guard_word = None      # the device guard word as a tensor (the graphed update reads it)
        self._calls = {}     # a module's calls in this step (module id -> count)
        self._device = None
        self._broken = None
        self.result = None   # the last step's nanscope.sdk.StepResult
        self._handles = []
        self._step_handles = []  # this step's gradient hooks on module outputs, removed at its end
        self._optimizer_step = None
        self._closed = False
        try:
            self._install(model, optimizer)
        except BaseException:
            self.close()  # nothing of a watch that failed to open stays installed
            raise

    def _install(self, model, optimizer):
        if optimizer is not None and getattr(optimizer, "_nanscope_watch", None) is not None:
            raise Refused("nanscope.torch: this optimizer is already watched (one watch an "
                          "optimizer: close the other first)")
        self._param_names = {p: n for n, p in model.named_parameters()}
        paths = {path for path, _ in model.named_modules()}
        root = "model"
        while root in paths:  # a submodule named `model` keeps its name; the model's own differs
            root += "_root"
        for path, module in model.named_modules():
            self._handles.append(module.register_forward_hook(self._forward_hook(path or root)))
        for name, p in model.named_parameters():
            if p.requires_grad:
                self._handles.append(p.register_hook(self._tensor_hook("grad:" + name)))
        global _original_backward
        if not _open_watches:
            _original_backward = torch.Tensor.backward
            torch.Tensor.backward = _patched_backward
        _open_watches.append(self)
        if optimizer is not None:
            # The update guarded, as a bound method of the optimizer (learning-rate schedulers
            # wrap optimizer.step by its __self__ and __func__).
            self._optimizer_step = optimizer.step
            self._own_step = "step" in optimizer.__dict__
            watch, original = self, optimizer.step

            def step(opt, *args, **kwargs):
                if watch._closed:  # wrapped by another (a scheduler made later): pass through
                    return original(*args, **kwargs)
                return watch._guarded_update(args, kwargs)
            if getattr(self._optimizer_step, "_with_counter", False):
                step._with_counter = True  # a scheduler made before the watch counts in it
            self._in_optimizer = {p for g in optimizer.param_groups for p in g["params"]}
            self._step_function = step
            optimizer.step = types.MethodType(step, optimizer)
            optimizer._nanscope_watch = self

    # The user's folds and steps.
    def fold(self, fold):
        return sdk._Scope(lambda: self._begin_fold(fold), lambda: self._end_fold(fold))

    def step(self):
        """The next step of the fold; its result (`.result`, a StepResult) after it ends."""
        return _StepScope(self)

    def allows_update(self):
        """For an update of your own (optimizer=None): may this step update? (False where
        anything fired, with guard on.)"""
        if self._in_step and not self._registered:
            self._register_and_check_found()
        return self._session.allows_update()

    def close(self):
        self._closed = True
        try:
            for h in self._handles + self._step_handles:
                h.remove()
            self._handles, self._step_handles = [], []
            if self in _open_watches:
                _open_watches.remove(self)
                if not _open_watches:
                    torch.Tensor.backward = _original_backward
            if self._optimizer_step is not None:
                # Ours is put back only where it is still on top; wrapped by another since, it
                # stays under the wrapper and passes every call through.
                if getattr(self.optimizer.__dict__.get("step"), "__func__", None) is \
                        self._step_function:
                    if self._own_step:
                        self.optimizer.step = self._optimizer_step
                    else:
                        del self.optimizer.step  # the class's own again
                self.optimizer._nanscope_watch = None
                self._optimizer_step = None
        finally:
            self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        self.close()
        return False

    @property
    def session(self):
        """The nanscope.sdk.Session underneath (its guard word, its writer)."""
        return self._session

    def slot_names(self):
        """The watched tensors' names, in slot order."""
        return list(self._slots)

    # Folds and steps.
    def _begin_fold(self, fold):
        if self._broken:
            raise Refused(f"nanscope.torch: the watch could not make its slot table ({self._broken}); "
                          "open a new watch")
        if self._registered:
            self._session._call("ns_fold_begin", self._session.handle, fold)
            self._fold_begun = True
        self._fold, self._next_step = fold, 0

    def _end_fold(self, fold):
        self._fold = None
        if self._fold_begun:
            self._session._call("ns_fold_end", self._session.handle, fold)
        self._fold_begun = False

    def _stream(self):
        return "torch" if self._device is not None and self._device.type == "cuda" else None

    def _keep_step_stream(self):
        """The step's stream: torch's current one when the step begins (on the device)."""
        self._stream_arg = self._session._stream(self._stream())
        self._step_stream = torch.cuda.current_stream() if self._stream() is not None else None

    def _begin_step(self):
        if self._fold is None:
            raise RuntimeError("nanscope.torch: a step outside a fold (with w.fold(i): ...)")
        if self._broken:
            raise Refused(f"nanscope.torch: the watch could not make its slot table ({self._broken}); "
                          "open a new watch")
        captured = _capturing()
        if captured and not self._registered:
            raise Refused("nanscope.torch: the first step of a watch is captured by "
                          "torch.cuda.graph: run it eagerly (it finds the tensors and registers "
                          "them, which a capture cannot do; torch.cuda.graph wants warm-up steps "
                          "before the capture anyway), then capture a later one")
        self._calls = {}
        if self._registered:
            # The step's stream (torch's current one on the device): its checks all take it.
            self._keep_step_stream()
            self._session._call("ns_step_begin", self._session.handle, self._next_step,
                                self._stream_arg)
        self._step = self._next_step
        self._step_captured = captured
        self._in_step = True
        if self._scaler is not None and self._scaler.is_enabled() and not captured:
            self._scale_before = float(self._scaler.get_scale())

    def _end_step(self, failed=False):
        self._in_step = False
        captured, self._step_captured = self._step_captured, False
        for h in self._step_handles:
            h.remove()
        self._step_handles = []
        if failed and self._broken:
            return None  # the table's own failure is the step's error
        if not self._registered:
            if failed:
                # The first step did not finish: what it found is not the run's table. The next
                # step finds it again, under the same number.
                self._found, self._found_names = [], set()
                return None
            self._register_and_check_found()
            self._after_update()
        if (not failed and not captured and self._scaler is not None
                and self._scaler.is_enabled() and self._scale_before is not None):
            scale = float(self._scaler.get_scale())
            self._session.loss_scale(scale, skipped=scale < self._scale_before)
        r = sdk.StepResult()
        self._session._call("ns_step_end", self._session.handle, sdk.ctypes.byref(r))
        self.result = r
        if captured:
            return r  # not run yet: each replay is a step (replayed())
        self._next_step = self._step + 1
        self._undefer_moments()
        return r

    def replayed(self):
        """After `graph.replay()` of a graph that holds one captured step: accounts the replays
        since the last call as the fold's next steps (ns_step_replayed, on torch's current
        stream); their result, also in `.result`."""
        if self._in_step:
            raise RuntimeError("nanscope.torch: replayed() inside a step (call it after the "
                               "step's `with` block, after graph.replay())")
        if self._fold is None:
            raise RuntimeError("nanscope.torch: replayed() outside a fold (with w.fold(i): ...)")
        r = self._session.replayed("torch")
        self.result = r
        self._next_step += r.replays
        # No moment is undeferred while a graph replays: the graph checks the slots it captured,
        # and a change of the table's states would end its accounting (docs/torch.md).
        return r

    # What the hooks see.
    def _wanted(self, name):
        if self._include is not None and not any(fnmatch.fnmatchcase(name, g)
                                                 for g in self._include):
            return False
        return not any(fnmatch.fnmatchcase(name, g) for g in self._exclude)

    def _forward_hook(self, path):
        def hook(module, inputs, output):
            if not self._in_step:
                return
            calls = self._calls.get(id(module), 0)
            self._calls[id(module)] = calls + 1
            name = path if calls == 0 else f"{path}#{calls}"
            if isinstance(output, dict):  # a model output of named fields (ModelOutput)
                named = [(re.sub(r"[^A-Za-z0-9_]", "_", str(k)), t) for k, t in output.items()]
            elif isinstance(output, (tuple, list)):
                named = [(str(i), t) for i, t in enumerate(output)]
            else:
                named = [(None, output)]
            several = len(named) > 1 or named[0][0] is not None
            for key, t in named:
                if not isinstance(t, torch.Tensor) or not _checkable(t):
                    continue
                out = f"{name}.{key}" if several else name
                self._seen(out, t)
                if t.requires_grad and self._wanted("grad:" + out):
                    self._step_handles.append(t.register_hook(self._tensor_hook("grad:" + out)))
        return hook

    def _tensor_hook(self, name):
        def hook(grad):
            if self._in_step:
                self._seen(name, grad)
        return hook

    def _seen_loss(self, tensor):
        """The step's loss: the first tensor of the step whose .backward() is called."""
        if self._in_step and "loss" not in self._calls:
            self._calls["loss"] = 1
            self._seen("loss", tensor)

    def _seen(self, name, tensor):
        """A tensor as the step has it now: checked, or (the first step) copied to be."""
        if (not self._in_step or not _checkable(tensor) or tensor.numel() == 0
                or not self._wanted(name)):
            return
        if self._device is None:
            self._device = tensor.device
        if not self._registered:
            if name not in self._found_names:
                self._found_names.add(name)
                self._found.append((name, tensor.detach().clone().contiguous()))
            return
        slot = self._slots.get(name)
        if slot is None:
            return  # a tensor the first step did not have (a branch not taken then)
        self._check([slot], [tensor])

    def _check(self, slots, tensors):
        """ns_check_at on these tensors, straight through ctypes: a hook's check is on the step's
        path, so it builds no Python list or array it can reuse (each slot keeps its own id)."""
        n = len(slots)
        if n == 0:
            return
        ids = (sdk.ctypes.c_int32 * n)() if n > 1 else slots[0].id_array
        addresses = (sdk.ctypes.c_uint64 * n)()  # a call's own (hooks may run on two threads)
        keep = []  # the contiguous copies of tensors that were not, alive until the call returns
        for i, (slot, t) in enumerate(zip(slots, tensors)):
            if t.shape != slot.torch_shape or t.dtype != slot.dtype:
                raise Refused(f"nanscope.torch: '{slot.name}' is {tuple(t.shape)} {t.dtype} at "
                              f"step {self._step}, registered as {slot.shape} {slot.dtype} (a "
                              f"watched tensor keeps its shape: exclude it, or keep shapes fixed)")
            if not t.is_contiguous():
                t = t.contiguous()
                keep.append(t)
            if n > 1:
                ids[i] = slot.id
            addresses[i] = t.data_ptr()
        s = self._session
        if self._stream() is None:
            s._call("ns_check_at", s.handle, ids, addresses, n, self._stream_arg)
            return
        # The library takes a step's checks on the step's stream only. Autograd may run a hook on
        # another: a leaf's gradient hook runs on the stream its AccumulateGrad node was made on,
        # which for a graph is the warm-up's side stream, not the capture's. Such a check is
        # ordered after the tensor is written and before that stream goes on (inside a capture
        # these waits are the graph's edges).
        current = torch.cuda.current_stream()
        elsewhere = current.cuda_stream != self._step_stream.cuda_stream
        if elsewhere:
            self._refuse_an_eager_step_checked_in_a_capture()
            self._step_stream.wait_stream(current)
        try:
            s._call("ns_check_at", s.handle, ids, addresses, n, self._stream_arg)
        except sdk.Error as e:
            self._refuse_an_eager_step_checked_in_a_capture(e)
            raise
        if elsewhere:
            current.wait_stream(self._step_stream)

    def _refuse_an_eager_step_checked_in_a_capture(self, cause=None):
        if not self._step_captured and _capturing():
            raise Refused("nanscope.torch: a step begun outside torch.cuda.graph's capture "
                          "checks inside it: begin the step inside the capture (`with "
                          "torch.cuda.graph(g), w.step():`)") from cause

    # The optimizer's update, guarded.
    def _guarded_update(self, args, kwargs):
        if self._in_step and not self._registered:
            self._register_and_check_found()
        if self._step_captured:
            out = self._graphed_update(args, kwargs)
            self._after_update()
            return out
        allowed = True
        if self._in_step and self._registered:
            allowed = self._session.allows_update()
        out = self._optimizer_step(*args, **kwargs) if allowed else None
        if self._in_step:
            self._after_update()
        return out

    def _graphed_update(self, args, kwargs):
        """The update inside a captured step: it runs, and what it changed is put back where the
        device guard word (set by this replay's checks before it) says a check fired."""
        if not self._guard_on:
            return self._optimizer_step(*args, **kwargs)
        kept = []
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                kept.append(p)
                kept.extend(v for v in self.optimizer.state.get(p, {}).values()
                            if isinstance(v, torch.Tensor))
        had_state = {p for p in self.optimizer.state if self.optimizer.state[p]}
        with torch.no_grad():
            before = [t.detach().clone() for t in kept]
            out = self._optimizer_step(*args, **kwargs)
            made = [p for p in self.optimizer.state
                    if self.optimizer.state[p] and p not in had_state]
            if made:
                # State made inside the graph could not be put back where a check fired.
                raise Refused(f"nanscope.torch: the optimizer made its state for {len(made)} "
                              f"parameter(s) inside the captured step: run an eager step that "
                              f"updates them before capturing (torch.cuda.graph's warm-up)")
            fired = self._guard_word.ne(0).reshape(())  # 0-dim: broadcasts to any tensor
            for t, old in zip(kept, before):
                t.copy_(torch.where(fired, old, t))
        return out

    def _after_update(self):
        """The optimizer's moments and the parameters, as the update left them."""
        if not self._registered or self.optimizer is None:
            return
        slots, tensors = [], []
        for p, name in self._param_names.items():
            state = self.optimizer.state.get(p, {})
            for key in ("exp_avg", "exp_avg_sq"):
                slot = self._slots.get(f"adam.{key}:{name}")
                if slot is not None and key in state and slot.id in self._live_moments:
                    slots.append(slot)
                    tensors.append(state[key])
            slot = self._slots.get("param:" + name)
            if slot is not None:
                slots.append(slot)
                tensors.append(p)
        if slots:
            self._check(slots, tensors)

    # The first step: the slots registered in the order their tensors came.
    def _register_and_check_found(self):
        try:
            self._make_table()
        except Exception as e:
            # The session's table is fixed at its first fold: a table that failed half-way cannot
            # be made again in this session.
            self._broken = f"{type(e).__name__}: {e}"
            raise

    def _make_table(self):
        s = self._session
        names = [n for n, _ in self._found]
        params = [(n, p) for p, n in self._param_names.items()]
        after = []
        if self.optimizer is not None:
            if isinstance(self.optimizer, (torch.optim.Adam, torch.optim.AdamW)):
                for name, p in params:
                    if p not in self._in_optimizer:
                        continue  # a frozen parameter has no moments
                    for key in ("exp_avg", "exp_avg_sq"):
                        after.append((f"adam.{key}:{name}", p))
            for name, p in params:
                after.append(("param:" + name, p))
        self._live_moments = set()
        order = 0
        for name, t in self._found:
            slot = _Slot(name, tuple(t.shape), t.dtype, t.device)
            slot.id = s.slot(name, order, t, phase=_phase(name), role="loss" if name == "loss"
                             else None)
            self._slots[name] = slot
            order += 1
        for name, p in after:
            if not self._wanted(name) or not _checkable(p) or p.numel() == 0:
                continue
            slot = _Slot(name, tuple(p.shape), p.dtype, p.device)
            if name.startswith("adam."):  # no moment before the first update: given after it
                slot.id = s.slot(name, order, None, phase="optimizer", deferred=True,
                                 shape=slot.shape, dtype=str(p.dtype).replace("torch.", ""),
                                 device=p.is_cuda)
            else:
                slot.id = s.slot(name, order, p.detach(), phase="optimizer")
            self._slots[name] = slot
            order += 1
        for slot in self._slots.values():
            slot.id_array = (sdk.ctypes.c_int32 * 1)(slot.id)
        self._registered = True
        s._call("ns_fold_begin", s.handle, self._fold)
        self._fold_begun = True
        self._keep_step_stream()
        if self._stream() is not None and self._guard_on:
            self._guard_word = s.guard_tensor()  # made outside any capture, for graphed updates
        s._call("ns_step_begin", s.handle, self._step, self._stream_arg)
        found = [self._slots[n] for n in names]
        self._check(found, [t for _, t in self._found])
        # The copies were this step's only: later steps check the tensors where they are.
        for slot in found:
            s._arrays[slot.id] = None
        self._found = []

    def _undefer_moments(self):
        """Adam's moments exist once the first update ran: their slots are checked from then."""
        if self.optimizer is None or not hasattr(self, "_live_moments") or _capturing():
            return
        for p, name in self._param_names.items():
            state = self.optimizer.state.get(p, {})
            for key in ("exp_avg", "exp_avg_sq"):
                slot = self._slots.get(f"adam.{key}:{name}")
                if slot is None or slot.id in self._live_moments or key not in state:
                    continue
                self._session.set_array(slot.id, state[key].detach())
                self._session.undefer(slot.id)
                self._live_moments.add(slot.id)


class _StepScope:
    """A step: its end knows whether the body raised (the first step's table then is not made)."""

    def __init__(self, watch):
        self.watch = watch

    def __enter__(self):
        self.watch._begin_step()
        return self

    def __exit__(self, kind, value, tb):
        self.watch._end_step(failed=kind is not None)
        return False


def _capturing():
    """Whether torch's current stream is being captured into a CUDA graph."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _phase(name):
    if name == "loss":
        return "loss"
    if name.startswith("grad:"):
        return "backward"
    if name.startswith(("adam.", "param:")):
        return "optimizer"
    return "forward"


def watch(model, optimizer=None, run_dir="runs/torch", **options):
    """Watches every module of `model` (and `optimizer`'s update): a Watch, also a context
    manager. Options: trainer, guard, health, capture, halt_on_nan, include, exclude, overwrite,
    folds, seed, config_text, lib (a library from nanscope.sdk.load), scaler (a GradScaler whose
    scale and skipped steps the run records), and the watches overflow_margin (a factor),
    underflow_share (a fraction) and loss_scale_floor (a scale); 0 turns a watch off."""
    return Watch(model, optimizer, run_dir=run_dir, **options)


__all__ = ["watch", "Watch", "Refused"]
