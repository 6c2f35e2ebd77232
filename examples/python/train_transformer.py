#!/usr/bin/env python3
"""A small GPT-style model in torch.nn, trained on synthetic tokens, every module watched by
nanscope (docs/torch.md). Runs on Debian's PyTorch 1.13, on the CPU or a CUDA device.

    PYTHONPATH=<source>/python train_transformer.py RUN_DIR [--bug-softmax] [--bug-layernorm]
        [--folds N] [--steps N] [--device cpu|cuda] [--unwatched] [--skip STEPS]
        [--params FILE] [--lib PATH] [--graph] [--precision fp32|bf16|fp16|pure-bf16]
        [--bug-fp16-scores] [--bug-bf16-adam] [--no-guard] [--overflow-margin F]

Two real mechanisms behind two switches:
- --bug-softmax: the attention softmax is written by hand, exp(s) / sum(exp(s)), over scores not
  scaled by 1/sqrt(d) and without subtracting the row's maximum. From step 6 of fold 1 the
  embeddings arrive 40x larger (an upstream scale change): the scores pass 88, exp overflows to
  inf and inf/inf is NaN, first in `blocks.0.attn.probs`. Without the switch the softmax is the
  stable one over scaled scores: large but finite.
- --bug-layernorm: the embedding's LayerNorm has no epsilon. From step 4 of fold 0 the batches
  hold padded sequences; the padding token's embedding row is zero (padding_idx), a constant row,
  whose variance is 0: 0/sqrt(0) is NaN, first in `embed_norm`. Without it, epsilon 1e-5 keeps it
  0.

Reduced precision (--precision): bf16 runs the forward under torch.autocast in bfloat16 (CPU or
CUDA); fp16 under autocast in float16 with a GradScaler (CUDA), whose scale and skipped steps the
run records (watch(..., scaler=)); pure-bf16 makes the model itself bfloat16, parameters,
gradients and Adam's moments too, without a loss scaler. The margin watch is on
(--overflow-margin, a factor: 256 by default). Two more mechanisms:
- --bug-fp16-scores (with --precision fp16): the attention scores are not scaled by 1/sqrt(d), and
  from step 3 of fold 0 the embeddings double each step (an upstream scale running away). The
  float16 scores grow 4x a step: the margin watch warns on `blocks.0.attn.scores` when they come
  within the factor of 65504, and steps later they overflow to +Inf there, where the check fires.
- --bug-bf16-adam (with --precision pure-bf16 and --no-guard): the loss is divided by a learnable
  temperature, which at step 5 of fold 0 is reloaded as 1e-20 (a value written in other units).
  The forward stays finite (a loss of 4e20 is within bfloat16's range), but the temperature's
  gradient, -loss / T^2, overflows to -Inf in bfloat16 and no loss scaler stands in the way:
  Adam's moments take the infinity and its update inf / inf makes the temperature NaN. The check
  names `grad:temperature` at step 5, then the moments and `param:temperature` after the update
  in the same step. (With the guard, that step's update is skipped instead.)

--graph (on a CUDA device): the first three steps run eagerly (the watch's table, torch's warm-up),
the fourth is captured with torch.cuda.graph, and every later step of every fold is a replay of
it, fed through static input tensors; the run file is the eager run's, bit for bit.

The guard skips the optimizer's update in a step where anything fired. The script prints each
fold's entry point and the skipped steps (`skipped fold F: S S ...`). --unwatched runs the same
training without nanscope, skipping the updates of the steps --skip lists (`F:S,F:S`), so that a
guarded run can be compared with it; --params saves the final parameters (torch.save).
"""
import argparse
import contextlib
import math

import torch
from torch import nn

VOCAB, DIM, HEADS, LAYERS, SEQ, BATCH = 48, 32, 2, 2, 12, 8
PAD = 0


class LayerNorm(nn.Module):
    """LayerNorm with its epsilon given (0 is the bug)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class Scores(nn.Module):
    """q k^T, scaled by 1/sqrt(d) unless the bug leaves it unscaled."""

    def __init__(self, head_dim, scaled):
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim) if scaled else 1.0

    def forward(self, q, k):
        return q @ k.transpose(-1, -2) * self.scale


class Softmax(nn.Module):
    """The attention's softmax: the stable one, or exp(s) / sum(exp(s)) (the bug)."""

    def __init__(self, naive):
        super().__init__()
        self.naive = naive

    def forward(self, s):
        if self.naive:
            e = torch.exp(s)
            return e / e.sum(-1, keepdim=True)
        return torch.softmax(s, dim=-1)


class Attention(nn.Module):
    def __init__(self, bug_softmax, unscaled):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.scores = Scores(DIM // HEADS, scaled=not (bug_softmax or unscaled))
        self.probs = Softmax(naive=bug_softmax)
        self.out = nn.Linear(DIM, DIM)
        self.register_buffer("causal", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        s = self.scores(q, k).masked_fill(~self.causal[:t, :t], -1e4)
        return self.out((self.probs(s) @ v).transpose(1, 2).reshape(b, t, DIM))


class Block(nn.Module):
    """A post-LN block (x = LN(x + attn(x)); x = LN(x + mlp(x))): attention reads its input as
    it comes."""

    def __init__(self, bug_softmax, unscaled):
        super().__init__()
        self.attn = Attention(bug_softmax, unscaled)
        self.ln1 = LayerNorm(DIM, 1e-5)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))
        self.ln2 = LayerNorm(DIM, 1e-5)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class Gpt(nn.Module):
    def __init__(self, bug_softmax, bug_layernorm, unscaled=False, temperature=False):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM, padding_idx=PAD)
        self.embed_norm = LayerNorm(DIM, 0.0 if bug_layernorm else 1e-5)
        self.pos = nn.Parameter(torch.randn(SEQ, DIM) * 0.02)
        self.blocks = nn.ModuleList(Block(bug_softmax, unscaled) for _ in range(LAYERS))
        self.head = nn.Linear(DIM, VOCAB)
        self.temperature = nn.Parameter(torch.ones(())) if temperature else None

    def forward(self, ids, input_scale):
        x = self.embed_norm(self.tok(ids)) * input_scale + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def batch(fold, step, padded):
    """Synthetic tokens (a noisy counting sequence: the next token is the previous plus one), the
    same for a (fold, step) in every run; padded sequences end in PAD tokens."""
    g = torch.Generator().manual_seed(1000 * fold + step)
    start = torch.randint(1, VOCAB, (BATCH, 1), generator=g)
    ids = (start + torch.arange(SEQ + 1)) % (VOCAB - 1) + 1
    noise = torch.rand(ids.shape, generator=g) < 0.1
    ids = torch.where(noise, torch.randint(1, VOCAB, ids.shape, generator=g), ids)
    if padded:
        ids[:, SEQ // 2:] = PAD
    return ids[:, :-1], ids[:, 1:]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("run_dir")
    p.add_argument("--bug-softmax", action="store_true")
    p.add_argument("--bug-layernorm", action="store_true")
    p.add_argument("--folds", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--device", default="cpu")
    p.add_argument("--unwatched", action="store_true")
    p.add_argument("--skip", default="")
    p.add_argument("--params")
    p.add_argument("--lib")
    p.add_argument("--graph", action="store_true")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16", "pure-bf16"], default="fp32")
    p.add_argument("--bug-fp16-scores", action="store_true")
    p.add_argument("--bug-bf16-adam", action="store_true")
    p.add_argument("--no-guard", action="store_true")
    p.add_argument("--overflow-margin", type=float, default=256.0)
    a = p.parse_args()
    cuda = a.device.startswith("cuda")
    if a.graph and (a.unwatched or not cuda):
        p.error("--graph: a watched run on a CUDA device")
    if a.precision == "fp16" and not cuda:
        p.error("--precision fp16: autocast in float16 and GradScaler need a CUDA device")
    if a.bug_fp16_scores and a.precision != "fp16":
        p.error("--bug-fp16-scores: with --precision fp16")
    if a.bug_bf16_adam and a.precision != "pure-bf16":
        p.error("--bug-bf16-adam: with --precision pure-bf16")
    if a.graph and a.precision != "fp32":
        p.error("--graph: in fp32 (GradScaler and autocast's caches are not captured here)")
    torch.manual_seed(7)
    torch.set_num_threads(1)  # the same sums in every run of a seed
    if a.device.startswith("cuda"):  # the same on the device (CUBLAS_WORKSPACE_CONFIG=:4096:8)
        torch.use_deterministic_algorithms(True)
    model = Gpt(a.bug_softmax, a.bug_layernorm, unscaled=a.bug_fp16_scores,
                temperature=a.bug_bf16_adam).to(a.device)
    if a.precision == "pure-bf16":
        model = model.to(torch.bfloat16)
    autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    # A small model's scaled gradients fit float16 from 2^10 on (GradScaler grows it from there).
    scaler = torch.cuda.amp.GradScaler(init_scale=2.0 ** 10) if a.precision == "fp16" else None
    # On the device the update keeps its step count there (capturable), as a graph needs; eager and
    # graphed runs then do the same arithmetic.
    opt = torch.optim.Adam(model.parameters(), lr=3e-3,
                           capturable=a.device.startswith("cuda"))
    loss_fn = nn.CrossEntropyLoss()
    skip = {tuple(int(v) for v in fs.split(":")) for fs in a.skip.split(",") if fs}
    # The step's inputs live in tensors of their own, refilled each step: a graph replays reads
    # of these addresses.
    x_in = torch.zeros((BATCH, SEQ), dtype=torch.long, device=a.device)
    y_in = torch.zeros((BATCH, SEQ), dtype=torch.long, device=a.device)
    scale_in = torch.ones((), device=a.device)

    def load(fold, step):
        padded = a.bug_layernorm and fold == 0 and step >= 4
        x, y = batch(fold, step, padded)
        x_in.copy_(x)
        y_in.copy_(y)
        scale = 40.0 if (fold == 1 and step >= 6) else 1.0
        if a.bug_fp16_scores and fold == 0 and step >= 3:
            scale = 2.0 ** (step - 2)
        scale_in.fill_(scale)
        if a.bug_bf16_adam and fold == 0 and step == 5:
            with torch.no_grad():
                model.temperature.fill_(1e-20)

    def train_step():
        opt.zero_grad(set_to_none=True)
        with (torch.autocast(device_type="cuda" if cuda else "cpu", dtype=autocast)
              if autocast else contextlib.nullcontext()):
            logits = model(x_in, scale_in.to(model.pos.dtype))
        loss = loss_fn(logits.float().reshape(-1, VOCAB), y_in.reshape(-1))
        if scaler is not None:
            scaler.scale(loss).backward()
        elif model.temperature is not None:
            (loss.to(model.temperature.dtype) / model.temperature).backward()
        else:
            loss.backward()
        return loss

    def update():
        if scaler is not None:
            scaler.step(opt)  # skipped by the scaler where a gradient overflowed
            scaler.update()
        else:
            opt.step()

    if a.unwatched:
        for fold in range(a.folds):
            for step in range(a.steps):
                load(fold, step)
                train_step()
                if (fold, step) not in skip:
                    update()
    else:
        import nanscope.sdk
        import nanscope.torch
        lib = nanscope.sdk.load(a.lib) if a.lib else None
        graph = None
        # torch's advice for a graph: its warm-up steps on a side stream.
        warmup = torch.cuda.Stream() if a.graph else None
        if warmup is not None:
            warmup.wait_stream(torch.cuda.current_stream())
        with nanscope.torch.watch(model, opt, run_dir=a.run_dir, trainer="train_transformer",
                                  folds=a.folds, seed=7, lib=lib, guard=not a.no_guard,
                                  scaler=scaler, overflow_margin=a.overflow_margin) as w:
            for fold in range(a.folds):
                skipped = []
                with w.fold(fold):
                    for step in range(a.steps):
                        if a.graph and graph is None and step == 3:
                            torch.cuda.current_stream().wait_stream(warmup)
                            graph = torch.cuda.CUDAGraph()
                            with torch.cuda.graph(graph), w.step():
                                loss = train_step()
                                opt.step()  # put back inside the graph where anything fired
                        if graph is not None:
                            load(fold, step)
                            graph.replay()
                            w.replayed()
                        else:
                            with torch.cuda.stream(warmup) if warmup else contextlib.nullcontext():
                                load(fold, step)
                                with w.step():
                                    loss = train_step()
                                    update()  # skipped by the guard where anything fired
                        if not w.result.updated:
                            skipped.append(step)
                r = w.result
                names = w.slot_names()
                entry = f"entry {names[r.entry_slot]} at step {r.entry_step}" \
                    if r.entry_slot >= 0 else "clean"
                print(f"fold {fold}: loss {loss.item():.4f}, {entry}")
                print(f"skipped fold {fold}: " + " ".join(str(s) for s in skipped))
    if a.params:
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, a.params)


if __name__ == "__main__":
    main()
