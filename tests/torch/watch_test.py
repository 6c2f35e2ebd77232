#!/usr/bin/env python3
"""nanscope.torch used as strangers use it, each case a defect a user found, on the CPU:
- an exception in the first step leaves no half-made table: the next step finds it again and the
  guard works;
- a learning-rate scheduler made after the watch;
- a submodule named `model` keeps its name, the model's own output is `model_root`;
- a manual update (optimizer=None) is guarded from the first step (w.allows_update());
- a table that cannot be made (everything excluded) is refused with its reason, then clearly;
- a step after its fold ended is refused as a step outside a fold;
- dict outputs (a ModelOutput) are watched by key;
- two watches closed in either order leave torch.Tensor.backward and optimizer.step as they were;
- a bfloat16 model (and a float16 layer) on the CPU is watched in its own types: +Inf born in the
  first layer's bfloat16 output is named there, and each slot's type is in the run file's table;
- the update of a step captured by torch.cuda.graph (on the device, inside the graph; here its
  arithmetic on the CPU): with the guard word set, the parameters and Adam's state come back bit
  for bit; with it clear, the update is the optimizer's own.

    watch_test.py BUILD_DIR SOURCE_DIR
    watch_test.py --installed     (the installed package, as python3 finds it and its library)
"""
import copy
import os
import shutil
import sys
import tempfile

import torch
from torch import nn

installed = sys.argv[1] == "--installed"
if not installed:
    build, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    sys.path.insert(0, os.path.join(source, "python"))
import nanscope.sdk  # noqa: E402
import nanscope.torch as nt  # noqa: E402

lib = nanscope.sdk.load(None if installed else os.path.join(build, "sdk", "libnanscope.so"))
work = tempfile.mkdtemp(prefix="nanscope_watch_")
original_backward = torch.Tensor.backward
torch.manual_seed(0)
x = torch.randn(16, 4)


def run_dir(name):
    return os.path.join(work, name)


def expect(cond, why):
    if not cond:
        sys.exit(f"watch_test: {why}")


try:
    # The first step raises: no table; the next steps find it, and the guard skips step 2's update.
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(m.parameters())
    with nt.watch(m, opt, run_dir=run_dir("raise"), lib=lib) as w:
        with w.fold(0):
            try:
                with w.step():
                    m(x)
                    raise RuntimeError("out of memory (a user's)")
            except RuntimeError:
                pass
            for s in range(3):
                before = [p.detach().clone() for p in m.parameters()]
                with w.step():
                    loss = m(x).pow(2).mean()
                    if s == 2:
                        loss = loss * float("nan")
                    loss.backward()
                    opt.step()
                r = w.result
            expect(r.fired == 1 and r.updated == 0 and r.entry_step == 2, f"step 2: {r.fired} "
                   f"{r.updated} {r.entry_step}")
            expect(w.slot_names()[r.entry_slot] == "loss", "the entry is not the loss")
            expect(all(torch.equal(a, b) for a, b in zip(before, m.parameters())),
                   "the guard let step 2's update through")
            expect("grad:0.weight" in w.slot_names(), "no gradient slots after the failed step")

    # A bfloat16 model with a float16 output: checked in their types, the entry named.
    class Halve(nn.Module):  # float16 (torch has no float16 matrix product on the CPU)
        def forward(self, x):
            return x.to(torch.float16) * 0.5

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(4, 8).to(torch.bfloat16)
            self.second = nn.Linear(8, 1).to(torch.bfloat16)
            self.halve = Halve()

        def forward(self, x):
            return self.halve(self.second(torch.relu(self.first(x.to(torch.bfloat16)))))
    m = Mixed()
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    with nt.watch(m, opt, run_dir=run_dir("mixed"), lib=lib) as w:
        with w.fold(0):
            for s in range(3):
                xs = x.clone()
                if s == 2:
                    xs[3, 1] = 3e38  # past bfloat16's largest finite value once multiplied
                    m.first.weight.data[0, 1] = 100
                with w.step():
                    m(xs).float().pow(2).mean().backward()
                    opt.step()
                r = w.result
            names = w.slot_names()
            expect(r.fired == 1 and r.entry_step == 2 and names[r.entry_slot] == "first",
                   f"mixed: fired {r.fired} at {r.entry_step}, entry "
                   f"{names[r.entry_slot] if r.entry_slot >= 0 else None}")
            expect({"first", "second", "halve", "grad:first.weight", "param:second.weight"} <=
                   set(names), names)
    import h5py
    with h5py.File(os.path.join(run_dir("mixed"), "run.h5"), "r") as f:
        buffers = {n.decode() if isinstance(n, bytes) else n: b.decode() if isinstance(b, bytes)
                   else b for n, b in zip(f["slots"]["name"][:], f["slots"]["buffer"][:])}
    expect("bfloat16" in buffers["first"] and buffers["halve"].endswith(" float16"), buffers)

    # A scheduler made after the watch.
    m = nn.Linear(4, 1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    with nt.watch(m, opt, run_dir=run_dir("sched"), lib=lib) as w:
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
        with w.fold(0):
            for _ in range(2):
                with w.step():
                    m(x).sum().backward()
                    opt.step()
                    sched.step()
    expect(abs(opt.param_groups[0]["lr"] - 0.025) < 1e-12, f"lr {opt.param_groups[0]['lr']}")
    before = m.weight.detach().clone()
    m(x).sum().backward()
    opt.step()  # the scheduler's wrapper around the closed watch's: passed through
    expect(not torch.equal(before, m.weight), "after close the optimizer no longer updates")

    # A submodule named `model`.
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.Sequential(nn.Linear(4, 1))

        def forward(self, x):
            return self.model(x).squeeze(-1)
    m = Outer()
    opt = torch.optim.Adam(m.parameters())
    with nt.watch(m, opt, run_dir=run_dir("named"), lib=lib) as w:
        with w.fold(0):
            for _ in range(2):
                with w.step():
                    m(x).sum().backward()
                    opt.step()
        expect({"model", "model_root", "model.0"} <= set(w.slot_names()), w.slot_names()[:6])

    # A manual update, guarded from the first step.
    m = nn.Linear(4, 1)
    with nt.watch(m, None, run_dir=run_dir("manual"), lib=lib) as w:
        with w.fold(0):
            with w.step():
                (m(x).sum() * float("nan")).backward()
                expect(not w.allows_update(), "a manual update allowed in a step that fired")

    # Everything excluded: refused with its reason, then clearly.
    m = nn.Linear(4, 1)
    opt = torch.optim.Adam(m.parameters())
    w = nt.watch(m, opt, run_dir=run_dir("none"), lib=lib, exclude=["*"])
    try:
        with w.fold(0):
            with w.step():
                m(x).sum().backward()
                opt.step()
        expect(False, "a watch of no tensor was taken")
    except nanscope.sdk.Error as e:
        expect("no slot is registered" in str(e), str(e))
    try:
        with w.fold(0):
            pass
        expect(False, "a broken watch began a fold")
    except nt.Refused as e:
        expect("could not make its slot table" in str(e), str(e))
    w.close()

    # A step after its fold.
    m = nn.Linear(4, 1)
    opt = torch.optim.Adam(m.parameters())
    with nt.watch(m, opt, run_dir=run_dir("after"), lib=lib) as w:
        with w.fold(0):
            with w.step():
                m(x).sum().backward()
                opt.step()
        try:
            with w.step():
                pass
            expect(False, "a step outside a fold was taken")
        except RuntimeError as e:
            expect("outside a fold" in str(e), str(e))

    # Dict outputs.
    class D(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(4, 2)

        def forward(self, x):
            y = self.l(x)
            return {"logits": y, "aux": y.sum(-1)}
    m = D()
    opt = torch.optim.Adam(m.parameters())
    with nt.watch(m, opt, run_dir=run_dir("dict"), lib=lib) as w:
        with w.fold(0):
            with w.step():
                m(x)["logits"].sum().backward()
                opt.step()
        expect({"model.logits", "model.aux"} <= set(w.slot_names()), w.slot_names())

    # Only parameters watched: the first step finds no hook tensor and still makes its table.
    m = nn.Linear(4, 1)
    opt = torch.optim.Adam(m.parameters())
    with nt.watch(m, opt, run_dir=run_dir("params"), lib=lib, include=["param:*"]) as w:
        with w.fold(0):
            for _ in range(2):
                with w.step():
                    m(x).sum().backward()
                    opt.step()
        expect(w.slot_names() == ["param:weight", "param:bias"], w.slot_names())

    # A watch that fails to open leaves nothing installed; an optimizer takes one watch.
    m = nn.Linear(4, 1)
    opt = torch.optim.Adam(m.parameters())
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    try:
        nt.watch(m, sched, run_dir=run_dir("bad"), lib=lib)  # a scheduler is no optimizer
        expect(False, "a scheduler was taken as an optimizer")
    except AttributeError:
        pass
    expect(torch.Tensor.backward is original_backward, "a failed watch left backward patched")
    expect(not m._forward_hooks, "a failed watch left its hooks")
    step_before = opt.__dict__.get("step")  # the scheduler's counting wrapper
    w1 = nt.watch(m, opt, run_dir=run_dir("bad"), lib=lib)  # its run_dir is free again
    try:
        nt.watch(m, opt, run_dir=run_dir("second"), lib=lib)
        expect(False, "a second watch of one optimizer was taken")
    except nt.Refused as e:
        expect("already watched" in str(e), str(e))
    w1.close()
    expect(opt.__dict__.get("step") is step_before, "optimizer.step is not what it was")

    # A persistent output's gradient hooks do not pile up; a second backward is not the loss; a
    # module whose output has no element is left out; a fold refused leaves the watch usable.
    class Keep(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))
            self.empty = nn.Linear(4, 0)

        def forward(self, x):
            self.empty(x)
            return self.w
    m = Keep()
    opt = torch.optim.Adam(m.parameters())
    with nt.watch(m, opt, run_dir=run_dir("keep"), lib=lib, folds=1) as w:
        with w.fold(0):
            for _ in range(5):
                with w.step():
                    out = m(x)
                    out.sum().backward()
                    (out.detach()[:2].requires_grad_() * 2).sum().backward()  # another shape
                    opt.step()
        expect(len(m.w._backward_hooks or {}) <= 1, f"{len(m.w._backward_hooks)} hooks piled up")
        expect("empty" not in w.slot_names(), "a zero-element output was registered")
        try:
            with w.fold(1):
                pass
            expect(False, "a fold past options.folds was taken")
        except nanscope.sdk.Error:
            pass
        try:
            with w.step():
                pass
            expect(False, "a step outside a fold was taken")
        except RuntimeError as e:
            expect("outside a fold" in str(e), str(e))
    expect(not m.w._backward_hooks, "hooks left after close")

    # Two watches, closed in the order they were opened.
    m1, m2 = nn.Linear(4, 1), nn.Linear(4, 1)
    w1 = nt.watch(m1, None, run_dir=run_dir("w1"), lib=lib)
    w2 = nt.watch(m2, None, run_dir=run_dir("w2"), lib=lib)
    w1.close()
    expect(torch.Tensor.backward is not original_backward, "w2's patch went with w1")
    w2.close()
    expect(torch.Tensor.backward is original_backward, "torch.Tensor.backward stays patched")

    # A captured step's update: the guard word decides, inside what would be the graph.
    m = nn.Linear(4, 3)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    with nt.watch(m, opt, run_dir=run_dir("graphed_update"), lib=lib) as w:
        with w.fold(0):
            with w.step():  # eager: the table, and Adam's state
                m(x).pow(2).sum().backward()
                opt.step()
        ref = copy.deepcopy(m)
        ref_opt = torch.optim.Adam(ref.parameters(), lr=0.1)
        ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()))

        def tensors(model, optimizer):
            return [t.detach().clone() for p in model.parameters()
                    for t in [p, *optimizer.state[p].values()] if isinstance(t, torch.Tensor)]
        for fired in (1, 0):
            for model in (m, ref):
                model.zero_grad(set_to_none=True)
                model(x).pow(2).sum().backward()
            before = tensors(m, opt)
            w._guard_word = torch.tensor([fired], dtype=torch.int32)
            w._graphed_update((), {})
            if fired:
                expect(all(torch.equal(a, b) for a, b in zip(before, tensors(m, opt))),
                       "a captured step's update was not put back where the guard word is set")
            else:
                ref_opt.step()
                expect(all(torch.equal(a, b) for a, b in zip(tensors(ref, ref_opt),
                                                             tensors(m, opt))),
                       "a captured step's update differs from the optimizer's own")
                expect(not all(torch.equal(a, b) for a, b in zip(before, tensors(m, opt))),
                       "a captured step's update changed nothing with the guard word clear")
    print("watch_test: a failed first step, a scheduler, a submodule named model, a manual update, "
          "a table of nothing, a step after its fold, dict outputs, a bfloat16 and float16 model, "
          "two watches and a captured step's guarded update all behave")
finally:
    shutil.rmtree(work, ignore_errors=True)
