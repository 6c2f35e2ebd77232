#!/usr/bin/env python3
"""train_numpy.py's logistic regression in PyTorch on a CUDA device, its step captured as a CUDA
graph, checked by nanscope's SDK on the device path.

    PYTHONPATH=<source>/python train_torch.py RUN_DIR [--bug] [--eager] [--folds N] [--steps N] [--lib PATH]

The same data and bug as train_numpy.py (feature 0 arrives x1000 from step 15 of fold 2; with
--bug log(1 / (1 + exp(-z))) gives -inf first in log_p). Every buffer is a tensor allocated once
and written in place (out= and in-place ops), so the graph replays it and the session checks it
by its address. The whole step (the checks and the guarded update included) is captured once
with torch.cuda.graph and replayed at every step; Session.replayed() accounts for each replay.
--eager runs the same step without the graph. Prints each fold's entry point.
"""
import argparse

import numpy as np
import torch

import nanscope.sdk as ns

FEATURES, BATCH = 6, 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--bug", action="store_true")
    ap.add_argument("--eager", action="store_true", help="no CUDA graph")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lib", help="libnanscope.so (default: the linker's)")
    a = ap.parse_args()

    dev = torch.device("cuda")
    t = {name: torch.zeros(shape, dtype=torch.float32, device=dev) for name, shape in [
        ("x", (BATCH, FEATURES)), ("y", BATCH), ("sign", BATCH), ("logits", BATCH),
        ("z", BATCH), ("tmp", BATCH), ("log_p", BATCH), ("loss", 1), ("p", BATCH),
        ("d_logits", BATCH), ("grad_w", FEATURES + 1), ("grad_norm", 1), ("w", FEATURES + 1),
        ("keep", 1), ("zero", BATCH)]}
    keep_bool = torch.zeros(1, dtype=torch.bool, device=dev)
    true_w = np.array([1.0, -2.0, 0.5, 0.0, 1.5, -1.0], np.float32)

    with ns.Session(a.run_dir, trainer="train_torch", config_text=f"bug = {str(a.bug).lower()}\n",
                    folds=a.folds, seed=7, guard=True, overwrite=True,
                    lib=ns.load(a.lib)) as s:
        sx = s.slot("x", 0, t["x"], phase="sample", consumers="logits, grad_w")
        s.slot("class_weights", 1, absent=True, phase="sample")
        slog = s.slot("logits", 2, t["logits"], phase="forward", consumers="log_p, d_logits")
        slp = s.slot("log_p", 3, t["log_p"], phase="forward", consumers="loss")
        sloss = s.slot("loss", 4, t["loss"], phase="forward", role="loss")
        sd = s.slot("d_logits", 5, t["d_logits"], phase="backward", consumers="grad_w")
        sg = s.slot("grad_w", 6, t["grad_w"], phase="backward", consumers="grad_norm, w")
        sn = s.slot("grad_norm", 7, t["grad_norm"], phase="backward", role="grad_norm")
        sw = s.slot("w", 8, t["w"], phase="optimizer")

        def compute():
            """Forward and backward into the tensors, on torch's current stream."""
            torch.mv(t["x"], t["w"][:FEATURES], out=t["logits"])
            t["logits"].add_(t["w"][FEATURES])
            torch.mul(t["logits"], t["sign"], out=t["z"])
            if a.bug:
                torch.neg(t["z"], out=t["tmp"])
                t["tmp"].exp_().add_(1.0).reciprocal_()
                torch.log(t["tmp"], out=t["log_p"])
            else:
                torch.neg(t["z"], out=t["tmp"])
                torch.logaddexp(t["zero"], t["tmp"], out=t["log_p"])
                t["log_p"].neg_()
            torch.mean(t["log_p"], 0, keepdim=True, out=t["loss"])
            t["loss"].neg_()
            torch.sigmoid(t["logits"], out=t["p"])
            torch.sub(t["p"], t["y"], out=t["d_logits"])
            t["d_logits"].div_(BATCH)
            torch.mv(t["x"].t(), t["d_logits"], out=t["grad_w"][:FEATURES])
            torch.sum(t["d_logits"], 0, keepdim=True, out=t["grad_w"][FEATURES:])
            torch.linalg.vector_norm(t["grad_w"], dim=0, keepdim=True, out=t["grad_norm"])

        def step(n, guard):
            """One step as the session sees it: checks, and the update the guard word allows."""
            with s.step(n, stream="torch") as st:
                compute()
                s.check([sx, slog, slp, sloss], stream="torch")
                s.check([sd, sg, sn], stream="torch")
                torch.eq(guard, 0, out=keep_bool)  # the device guard word: 0 lets it update
                t["keep"].copy_(keep_bool)
                t["w"].addcmul_(t["keep"], t["grad_w"], value=-0.5)
                s.check([sw], stream="torch")
            return st

        def load_batch(fold, n):
            rng = np.random.default_rng(1000 * fold + n)
            x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
            y = (x @ true_w > 0).astype(np.float32)
            if fold == 2 and n >= 15:
                x[:, 0] *= 1000.0
            t["x"].copy_(torch.from_numpy(x))
            t["y"].copy_(torch.from_numpy(y))
            t["sign"].copy_(torch.from_numpy(2.0 * y - 1.0))

        graph = None
        for fold in range(a.folds):
            entry = None
            with s.fold(fold):
                guard = s.guard_tensor()
                if graph is None and not a.eager:
                    # torch's advice: run the ops once on a side stream before capturing them.
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        compute()
                    torch.cuda.current_stream().wait_stream(side)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        captured = step(0, guard)
                    assert captured.result.fired == -1  # captured, not run
                for n in range(a.steps):
                    load_batch(fold, n)
                    if graph is None:
                        r = step(n, guard).result
                    else:
                        graph.replay()
                        r = s.replayed()
                    if r.entry_slot >= 0:
                        entry = (r.entry_slot, r.entry_step)
            ns.report_fold(fold, t['loss'].item(), entry)
    return 0


if __name__ == "__main__":
    ns.run_trainer(main, "train_torch")
