#!/usr/bin/env python3
"""What nanscope.torch costs a real model's step on the device, against its peers on the same
model and steps (docs/torch.md; the device check's part torch, scripts/gpu-check.sh).

    PYTHONPATH=<source>/python torch_watch_cost.py --lib LIBNANSCOPE [--steps N] [--layers N]
        [--keep DIR]

The model: transformers' GPT2LMHeadModel from a GPT2Config (6 layers, random init, no download),
batch 16 x 256 tokens, AdamW, on CUDA. Each mode's step (forward, backward, update) is timed over
--steps steps after three of warm-up, with the device synchronised around each step; the median
is reported, and each mode's ratio to the unwatched step:
- plain: the step alone;
- nanscope: every module watched by nanscope.torch (health on, the guard on);
- detect_anomaly: under torch.autograd.detect_anomaly();
- debug_underflow_overflow: transformers' DebugUnderflowOverflow on every module;
- plain_graphed: the step captured by torch.cuda.graph (AdamW capturable), each replay timed;
- nanscope_graphed: the same with every module watched, the step captured inside the watch, each
  replay followed by w.replayed() (its accounting and read-back are in the time), against
  plain_graphed.
Then the NaN check: a NaN injected through a forward hook into block 3's attention output at step
5 of a watched run; the entry must be `transformer.h.3.attn.0` at step 5.
Prints one line a mode ("mode: median ms, ratio") and "torch_watch_cost: ..." at the end; exits 1
when the entry is not the injected module. --keep copies that run's run.h5 into DIR (for the
workbench and nanscope-run).
"""
import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch


def model_and_batch(layers):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(n_layer=layers, n_positions=256, n_ctx=256)
    model = GPT2LMHeadModel(config).cuda()
    ids = torch.randint(0, config.vocab_size, (16, 256), device="cuda")
    return model, ids


def time_steps(step, steps):
    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--keep")
    a = p.parse_args()
    import nanscope.sdk
    import nanscope.torch
    lib = nanscope.sdk.load(a.lib)
    work = tempfile.mkdtemp(prefix="nanscope_torch_cost_")
    results = {}

    def trainer(capturable=False):
        model, ids = model_and_batch(a.layers)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=capturable)

        def step():
            opt.zero_grad(set_to_none=True)
            model(ids, labels=ids).loss.backward()
            opt.step()
        return model, opt, step

    _, _, step = trainer()
    results["plain"] = time_steps(step, a.steps)

    model, opt, step = trainer()
    with nanscope.torch.watch(model, opt, run_dir=os.path.join(work, "watched"), lib=lib) as w:
        with w.fold(0):
            def watched():
                with w.step():
                    step()
            results["nanscope"] = time_steps(watched, a.steps)
        slots = len(w.slot_names())

    _, _, step = trainer()

    def anomaly():
        with torch.autograd.detect_anomaly():
            step()
    results["detect_anomaly"] = time_steps(anomaly, a.steps)

    model, _, step = trainer()
    from transformers.debug_utils import DebugUnderflowOverflow
    DebugUnderflowOverflow(model)
    results["debug_underflow_overflow"] = time_steps(step, a.steps)

    def graphed(watch_dir):
        """The step captured (inside a watch when watch_dir is set), then its replays timed."""
        model, opt, step = trainer(capturable=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        w = nanscope.torch.watch(model, opt, run_dir=watch_dir, lib=lib) if watch_dir else None
        scope = w.fold(0) if w else None
        try:
            if scope:
                scope.__enter__()
            with torch.cuda.stream(side):  # warm-up (and the watch's table) on a side stream
                for _ in range(3):
                    with (w.step() if w else contextlib.nullcontext()):
                        step()
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(g), (w.step() if w else contextlib.nullcontext()):
                step()

            def replay():
                g.replay()
                if w:
                    w.replayed()
            ms = time_steps(replay, a.steps)
            if w and w.result.fired:
                raise RuntimeError("the graphed watched step fired on a clean model")
            return ms
        finally:
            if scope:
                scope.__exit__(None, None, None)
            if w:
                w.close()

    for mode, watch_dir in (("plain_graphed", None),
                            ("nanscope_graphed", os.path.join(work, "graphed"))):
        try:
            results[mode] = graphed(watch_dir)
        except Exception as e:  # a model torch cannot capture is reported, not hidden
            print(f"{mode}: not measured: {type(e).__name__}: {e}")
        torch.cuda.empty_cache()

    for mode, ms in results.items():
        if mode == "nanscope_graphed" and "plain_graphed" not in results:
            print(f"{mode}: {ms:.3f} ms (no unwatched graphed step to compare with)")
            continue
        base = results["plain_graphed"] if mode == "nanscope_graphed" else results["plain"]
        peer = "the unwatched graphed step" if mode == "nanscope_graphed" else "the unwatched step"
        print(f"{mode}: {ms:.3f} ms, {ms / base:.3f}x {peer}")

    # The NaN check: block 3's attention output poisoned at step 5.
    model, opt, step = trainer()
    poison = {"on": False}

    def inject(module, inputs, output):
        if poison["on"]:
            output[0].view(-1)[123] = float("nan")
        return output
    model.transformer.h[3].attn.register_forward_hook(inject)
    with nanscope.torch.watch(model, opt, run_dir=os.path.join(work, "nan"), lib=lib) as w:
        with w.fold(0):
            for s in range(8):
                poison["on"] = s == 5
                with w.step():
                    step()
        r = w.result
        entry = w.slot_names()[r.entry_slot] if r.entry_slot >= 0 else None
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        shutil.copy(os.path.join(work, "nan", "run.h5"), a.keep)
    graphed_line = (f"; graphed {results['nanscope_graphed'] / results['plain_graphed']:.3f}x the "
                    f"unwatched graphed step ({results['plain_graphed']:.2f} ms)"
                    if "nanscope_graphed" in results and "plain_graphed" in results else
                    "; graphed: not measured")
    print(f"torch_watch_cost: {slots} slots; nanscope {results['nanscope'] / results['plain']:.3f}x, "
          f"detect_anomaly {results['detect_anomaly'] / results['plain']:.3f}x, "
          f"DebugUnderflowOverflow {results['debug_underflow_overflow'] / results['plain']:.3f}x "
          f"the unwatched step ({results['plain']:.2f} ms); the injected NaN's entry: {entry} at "
          f"step {r.entry_step}{graphed_line}")
    if entry != "transformer.h.3.attn.0" or r.entry_step != 5:
        sys.exit(1)


if __name__ == "__main__":
    main()
