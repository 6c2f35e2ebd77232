"""The scaling table: nanscope's graphed step against cuBLAS SGEMM and the PyTorch twin, per size.

    step_scaling.py BIN_DIR OUT_DIR [--batches 64,256,1024,4096] [--hiddens 128,512,2048]

Runs BIN_DIR/bench_step_scaling over the grid (the graphed step with every check on, its GEMM
FLOP rate, cuBLAS SGEMM alone on the step's largest GEMM shape, same run), then for each point
writes a twin fixture of that size (BIN_DIR/twin_fixture --state-only) and times the PyTorch twin's
training step eagerly and captured in a CUDA graph (bench/torch_twin.py's timing). Prints one table.
Without PyTorch the twin's columns are left out.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("out")
    ap.add_argument("--batches", default="64,256,1024,4096")
    ap.add_argument("--hiddens", default="128,512,2048")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    points = os.path.join(a.out, "scaling_points.txt")
    subprocess.run([os.path.join(a.bin, "bench_step_scaling"), a.batches, a.hiddens, points], check=True)
    rows = [line.split() for line in open(points) if line.strip()]
    try:
        sys.path.insert(0, HERE)
        import torch
        import torch_twin
        torch.backends.cuda.matmul.allow_tf32 = False
        dev = torch.device("cuda")
    except Exception as e:  # noqa: BLE001 - the twin is optional
        print(f"PyTorch twin skipped: {e}")
        torch_twin = None
    print("\nscaling: graphed step (every check on) vs cuBLAS SGEMM on its largest GEMM and the PyTorch twin, same run")
    print(f"{'batch':>6} {'hidden':>6} {'ms/step':>9} {'TFLOP/s':>8} {'of SGEMM':>9} "
          f"{'twin eager':>11} {'twin graph':>11} {'vs graph':>9}")
    for r in rows:
        batch, hidden = int(r[0]), int(r[1])
        ms, gflop, sgemm_ms = float(r[2]), float(r[3]), float(r[4])
        m, n, k = int(r[5]), int(r[6]), int(r[7])
        step_tf = gflop / ms
        sgemm_tf = 2.0 * m * n * k / sgemm_ms / 1e9
        twin = ""
        if torch_twin is not None:
            fixture = os.path.join(a.out, f"twin_{batch}_{hidden}.h5")
            subprocess.run([os.path.join(a.bin, "twin_fixture"), fixture, "cuda", "1", "--state-only",
                            f"model.batch={batch}", f"model.hidden={hidden}"], check=True,
                           stderr=subprocess.DEVNULL)
            cfg, p, tp, b, _ = torch_twin.load(fixture, dev)
            reps = 10 if batch * hidden >= 1024 * 2048 else 30
            eager, graphed = torch_twin.time_steps(cfg, p, tp, b, dev, reps=reps)
            os.remove(fixture)
            twin = f"{eager:10.3f}  {graphed:10.3f}  {graphed / ms:8.2f}x"
            del p, tp, b
            torch.cuda.empty_cache()
        print(f"{batch:>6} {hidden:>6} {ms:>9.4f} {step_tf:>8.2f} {100 * step_tf / sgemm_tf:>8.1f}% {twin}",
              flush=True)


if __name__ == "__main__":
    main()
