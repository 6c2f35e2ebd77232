#!/usr/bin/env python3
"""A logistic-regression trainer in numpy that checks its buffers with nanscope's SDK.

    PYTHONPATH=<source>/python train_numpy.py RUN_DIR [--bug] [--folds N] [--steps N] [--lib PATH]

From step 15 of fold 2 on, feature 0 arrives in other units (x1000). With --bug the log-likelihood
is computed as log(1 / (1 + exp(-z))): exp overflows to inf for a large negative z, 1/inf is 0 and
log(0) is -inf, first in the slot log_p. Without --bug it is -logaddexp(0, -z), finite for every z.
The guard skips the update of a step that fired. Prints each fold's entry point; exit 0, or 1 when
a call was refused.
"""
import argparse

import numpy as np

import nanscope.sdk as ns

FEATURES, BATCH = 6, 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--bug", action="store_true")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lib", help="libnanscope.so (default: the linker's)")
    a = ap.parse_args()

    # Every checked buffer is allocated once and written in place: the session checks it by its
    # address.
    x = np.zeros((BATCH, FEATURES), np.float32)
    y = np.zeros(BATCH, np.float32)
    logits = np.zeros(BATCH, np.float32)
    log_p = np.zeros(BATCH, np.float32)
    loss = np.zeros(1, np.float32)
    d_logits = np.zeros(BATCH, np.float32)
    grad_w = np.zeros(FEATURES + 1, np.float32)
    grad_norm = np.zeros(1, np.float32)
    w = np.zeros(FEATURES + 1, np.float32)
    true_w = np.array([1.0, -2.0, 0.5, 0.0, 1.5, -1.0], np.float32)

    with ns.Session(a.run_dir, trainer="train_numpy", config_text=f"bug = {str(a.bug).lower()}\n",
                    folds=a.folds, seed=7, guard=True, overwrite=True,
                    lib=ns.load(a.lib)) as s:
        sx = s.slot("x", 0, x, phase="sample", consumers="logits, grad_w")
        s.slot("class_weights", 1, absent=True, phase="sample")  # this trainer weighs no class
        slog = s.slot("logits", 2, logits, phase="forward", consumers="log_p, d_logits")
        slp = s.slot("log_p", 3, log_p, phase="forward", consumers="loss")
        sloss = s.slot("loss", 4, loss, phase="forward", role="loss")
        sd = s.slot("d_logits", 5, d_logits, phase="backward", consumers="grad_w")
        sg = s.slot("grad_w", 6, grad_w, phase="backward", consumers="grad_norm, w")
        sn = s.slot("grad_norm", 7, grad_norm, phase="backward", role="grad_norm")
        sw = s.slot("w", 8, w, phase="optimizer")
        for fold in range(a.folds):
            entry = None
            with s.fold(fold):
                for step in range(a.steps):
                    rng = np.random.default_rng(1000 * fold + step)
                    x[...] = rng.standard_normal((BATCH, FEATURES))
                    y[...] = (x @ true_w > 0).astype(np.float32)
                    if fold == 2 and step >= 15:
                        x[:, 0] *= 1000.0  # the unit change
                    with s.step(step) as st:
                        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                            logits[...] = x @ w[:FEATURES] + w[FEATURES]
                            z = np.where(y > 0, logits, -logits)
                            if a.bug:
                                log_p[...] = np.log(1.0 / (1.0 + np.exp(-z)))
                            else:
                                log_p[...] = -np.logaddexp(0.0, -z)
                            loss[...] = -log_p.mean()
                            s.check([sx, slog, slp, sloss])
                            p = 1.0 / (1.0 + np.exp(-logits))
                            d_logits[...] = (p - y) / BATCH
                            grad_w[:FEATURES] = x.T @ d_logits
                            grad_w[FEATURES] = d_logits.sum()
                            grad_norm[...] = np.sqrt((grad_w.astype(np.float64) ** 2).sum())
                        s.check([sd, sg, sn])
                        if s.allows_update():
                            w -= 0.5 * grad_w
                        s.check([sw])
                    if st.result.entry_slot >= 0:
                        entry = (st.result.entry_slot, st.result.entry_step)
            ns.report_fold(fold, loss[0], entry)
    return 0


if __name__ == "__main__":
    ns.run_trainer(main, "train_numpy")
