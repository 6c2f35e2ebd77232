"""An independent PyTorch twin of nanscope's trainer step, for a third opinion on the gradients and a
peer for the step rate.

    torch_twin.py FIXTURE.h5 [--tol 1e-4] [--time [--nanscope-step FILE]]

FIXTURE.h5 is a dump written by tests/twin/twin_fixture (the state before a step, its batch and
draws, and the slot buffers 1-36 at their check moments, from the CPU or the CUDA backend). The twin
rebuilds the network from spec/trainer.md with torch operations, recomputes the step's forward and,
with autograd, the gradients that slots 24-35 hold, and prints the norm-wise relative error of each
slot against the fixture. Exit status 1 when one exceeds --tol. With --time it also times a whole
training step (forward, backward, clip, Adam) eagerly and, on a GPU, captured in a CUDA graph.
With --nanscope-step FILE (written by bench_cuda_step in the same session: nanscope's graphed and
ungraphed ms per step) it prints step_rate: nanscope's graphed step against both twins.
Runs on the GPU when torch sees one, else on the CPU.
"""
import argparse
import functools
import sys
import time
import tomllib

import h5py
import numpy as np
import torch

SUB = [3, 3, 2]          # sub-actions per branch
OFF = [0, 3, 6]          # their offsets in A_total = 8


@functools.cache
def offsets(dev):
    """OFF as a tensor on dev, made once (a CUDA graph capture may not copy it from the host)."""
    return torch.tensor(OFF, device=dev)


def load(path, dev):
    with h5py.File(path, "r") as f:
        cfg = tomllib.loads(f.attrs["config"].decode() if isinstance(f.attrs["config"], bytes) else f.attrs["config"])
        params, target = {}, {}
        for name, ds in f["context/params"].items():
            t = torch.tensor(ds[()], dtype=torch.float32, device=dev)
            (target if name.startswith("target.") else params)[name.removeprefix("target.")] = t
        batch = {k: torch.tensor(v[()], device=dev) for k, v in f["context/batch"].items()}
        slots = {int(ds.attrs["index"]): torch.tensor(ds[()], dtype=torch.float64) for ds in f["slots"].values()}
    return cfg, params, target, batch, slots


def branch_mean(adv):  # adv [B, A, NA] -> the mean over each branch's sub-actions, broadcast back
    return torch.cat([adv[:, o:o + n].mean(1, keepdim=True).expand(-1, n, -1) for o, n in zip(OFF, SUB)], 1)


def trunk(p, x):
    h1 = torch.relu(x @ p["encoder.w1"] + p["encoder.b1"])
    h2 = torch.relu(h1 @ p["encoder.w2"] + p["encoder.b2"])
    return h1, h2


def heads(p, h2, na):
    z = h2 @ p["bottleneck.w"] + p["bottleneck.b"]
    v = z @ p["value.w"] + p["value.b"]
    adv = (z @ p["adv.w"] + p["adv.b"]).view(z.shape[0], 8, na)
    logp = torch.log_softmax(v[:, None, :] + adv - branch_mean(adv), -1)
    return z, v, adv, logp


def iqn(p, h2, tau, n_cos):  # tau [B, n] -> cos [B, n, C], phi [B, n, H], q [B, n, A]
    i = torch.arange(n_cos, device=tau.device, dtype=torch.float64)
    cos = torch.cos(torch.pi * i * tau.double()[..., None]).float()
    phi = torch.relu(cos @ p["iqn.phi.w"] + p["iqn.phi.b"])
    q = (h2[:, None, :] * phi) @ p["iqn.out.w"] + p["iqn.out.b"]
    return cos, phi, q


def greedy(q):  # q [B, A] -> a*_d [B, D] (first maximum; the fixtures are NaN-free)
    return torch.stack([q[:, o:o + n].argmax(1) for o, n in zip(OFF, SUB)], 1)


def step(cfg, p, tp, b):
    """The step's forward: every slot buffer 1-20 and 36 and the loss terms (total with gradients)."""
    m_cfg, l_cfg = cfg["model"], cfg["loss"]
    na, n_cos, kappa = m_cfg["atoms"], m_cfg["iqn_cos"], m_cfg["kappa"]
    dev = b["obs"].device
    zeta = torch.linspace(m_cfg["v_min"], m_cfg["v_max"], na, device=dev)
    dz = (m_cfg["v_max"] - m_cfg["v_min"]) / (na - 1)
    gamma_n = m_cfg["gamma"] ** cfg["data"]["n_step"]
    obs, nxt = b["obs"].float(), b["next_obs"].float()
    R, done, acts = b["returns"].float(), b["done"].float(), b["actions"].long()
    B, D = obs.shape[0], 3
    take = torch.stack([acts[:, d] + OFF[d] for d in range(D)], 1)  # [B, D] taken sub-action index
    s = {}
    s[1], s[2] = trunk(p, obs)
    s[3], s[4], s[5], s[6] = heads(p, s[2], na)
    with torch.no_grad():  # targets carry no gradient
        _, h2n = trunk(p, nxt)
        _, _, _, logp_n = heads(p, h2n, na)
        astar = greedy((logp_n.exp() * zeta).sum(-1))
        _, h2t = trunk(tp, nxt)
        _, _, _, s[7] = heads(tp, h2t, na)
        pj = torch.gather(s[7], 1, (astar + offsets(dev))[..., None].expand(-1, -1, na)).exp()
        disc = gamma_n * (1 - done)
        tz = (R[:, None] + disc[:, None] * zeta).clamp(m_cfg["v_min"], m_cfg["v_max"])  # [B, NA]
        w = (1 - (tz[:, None, :] - zeta[:, None]).abs() / dz).clamp(0, 1)                # [B, i, j]
        s[8] = torch.einsum("bij,bdj->bdi", w, pj)                                          # [B, D, NA]
        y = R[:, None] + disc[:, None] * (pj * zeta).sum(-1)                               # [B, D]
    lp_taken = torch.gather(s[6], 1, take[..., None].expand(-1, -1, na))                  # [B, D, NA]
    s[9] = -(s[8] * lp_taken).sum(-1).mean(1)
    c51 = s[9].mean()
    s[10] = (s[6].exp() * zeta).sum(-1)                                                    # [B, A]
    q_taken = torch.gather(s[10], 1, take)
    mse = ((q_taken - y) ** 2).mean()
    s[11] = torch.stack([torch.logsumexp(s[10][:, o:o + n], 1) for o, n in zip(OFF, SUB)], 1)
    cql = l_cfg["alpha_cql"] * (s[11] - q_taken).sum(1).mean()
    terms = {"c51": c51, "mse": mse, "cql": cql}
    if l_cfg["lambda_iqn"] > 0:
        s[12] = b["tau"].float()
        s[36], s[13], s[14] = iqn(p, s[2], s[12], n_cos)
        with torch.no_grad():
            _, _, qg = iqn(p, h2n, b["tau_greedy"].float(), n_cos)
            a_iqn = greedy(qg.mean(1))
            _, _, s[15] = iqn(tp, h2t, b["tau_target"].float(), n_cos)
            T = R[:, None, None] + disc[:, None, None] * torch.gather(
                s[15], 2, (a_iqn + offsets(dev))[:, None, :].expand(-1, s[15].shape[1], -1)
            ).transpose(1, 2)                                                                 # [B, D, N']
        qi = torch.gather(s[14], 2, take[:, None, :].expand(-1, s[14].shape[1], -1)).transpose(1, 2)  # [B, D, N]
        delta = T[:, :, None, :] - qi[..., None]                                               # [B, D, N, N']
        huber = torch.where(delta.abs() <= kappa, 0.5 * delta ** 2, kappa * (delta.abs() - 0.5 * kappa))
        rho = (s[12][:, None, :, None] - (delta < 0).float()).abs() * huber / kappa
        s[16] = rho.mean(-1).sum(-1).mean(-1)
        terms["iqn"] = s[16].mean()
    s[17] = torch.relu(s[2] @ p["aux.w1"] + p["aux.b1"]) @ p["aux.w2"] + p["aux.b2"]
    s[18] = ((s[17] - b["next_bar"].float()) ** 2).mean(1)
    terms["aux"] = s[18].mean()
    s[19] = torch.einsum("bz,ezn->ebn", s[3], p["ens.w"]) + p["ens.b"][:, None, :]
    ens_lsm = torch.log_softmax(s[19], -1)                                                  # [E, B, NA]
    terms["ens"] = -(s[8][None] * ens_lsm[:, :, None, :]).sum(-1).mean()
    lam = {"mse": l_cfg["lambda_mse"], "iqn": l_cfg["lambda_iqn"], "aux": l_cfg["lambda_aux"],
           "ens": l_cfg["lambda_ens"]}
    main = c51 + lam["mse"] * mse + cql + lam["ens"] * terms["ens"]
    total = main + lam["aux"] * terms["aux"] + (lam["iqn"] * terms["iqn"] if "iqn" in terms else 0)
    s[20] = total.reshape(1)
    return s, terms, lam, main, total


def gradients(s, terms, lam, main, total):
    """What slots 24-35 hold: gradients of the named losses w.r.t. the named buffers."""
    g = lambda loss, wrt: torch.autograd.grad(loss, wrt, retain_graph=True)[0]
    out = {24: g(total, s[4]), 25: g(total, s[5]), 29: g(terms["cql"], s[4]), 31: g(terms["ens"], s[19]),
           32: g(total, s[3]), 33: g(main, s[2]), 30: g(terms["aux"], s[2])}
    out[34] = out[33] + lam["aux"] * out[30]
    if "iqn" in terms:
        out[28] = g(terms["iqn"], s[14])
        out[27] = g(terms["iqn"], s[2])
        out[26] = out[34] + lam["iqn"] * out[27]
        out[35] = out[26]
    return out


def rel_error(a, ref):
    a, ref = a.detach().double().cpu().reshape(-1), ref.reshape(-1)
    n = ref.norm()
    return float((a - ref).norm() / n) if n > 0 else float((a - ref).norm())


def time_steps(cfg, p, tp, b, dev, reps=50):
    """ms per training step: forward, backward, clip, Adam (eager; and as a CUDA graph on a GPU)."""
    params = [t.detach().clone().requires_grad_(True) for t in p.values()]
    named = dict(zip(p.keys(), params))
    o = cfg["optim"]
    opt = torch.optim.Adam(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                           capturable=dev.type == "cuda")

    def train_step():
        opt.zero_grad(set_to_none=False)
        _, _, _, _, total = step(cfg, named, tp, b)
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, o["max_grad_norm"])
        opt.step()

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(5):
        train_step()
    sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        train_step()
    sync()
    eager = (time.perf_counter() - t0) * 1e3 / reps
    graphed = None
    if dev.type == "cuda":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                train_step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            train_step()
        graph.replay()
        sync()
        t0 = time.perf_counter()
        for _ in range(reps):
            graph.replay()
        sync()
        graphed = (time.perf_counter() - t0) * 1e3 / reps
    return eager, graphed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--nanscope-step", help="file with nanscope's graphed and ungraphed ms per step")
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False  # full fp32, as nanscope's cuBLAS calls
    torch.backends.cudnn.allow_tf32 = False
    cfg, p, tp, b, ref = load(a.fixture, dev)
    for t in p.values():
        t.requires_grad_(True)
    s, terms, lam, main_loss, total = step(cfg, p, tp, b)
    for k in s:
        if k not in (12,) and s[k].requires_grad:
            s[k].retain_grad()
    grads = gradients(s, terms, lam, main_loss, total)
    print(f"torch_twin on {dev} (torch {torch.__version__}), fixture from the "
          f"{h5py.File(a.fixture, 'r').attrs['backend']} backend; norm-wise relative error twin vs fixture:")
    worst = 0.0
    for k in sorted(set(s) | set(grads)):
        if k not in ref:
            continue
        mine = grads[k] if k in grads else s[k]
        e = rel_error(mine, ref[k])
        worst = max(worst, e)
        print(f"  slot {k:2d}  {e:.2e}{'   <-- above tolerance' if e > a.tol else ''}")
    print(f"largest {worst:.2e} (tolerance {a.tol:g})")
    if a.time:
        eager, graphed = time_steps(cfg, p, tp, b, dev)
        print(f"twin training step: eager {eager:.3f} ms" + (f", CUDA graph {graphed:.3f} ms" if graphed else ""))
        if a.nanscope_step and graphed:
            ours, ours_ungraphed = (float(x) for x in open(a.nanscope_step).read().split())
            print(f"step_rate: nanscope graph {ours:.3f} ms, ungraphed {ours_ungraphed:.3f} ms; "
                  f"vs twin eager {eager / ours:.2f}x (target >= 5x), vs twin graphed {graphed / ours:.2f}x "
                  f"(target >= 1.5x)")
    sys.exit(0 if worst <= a.tol else 1)


if __name__ == "__main__":
    main()
