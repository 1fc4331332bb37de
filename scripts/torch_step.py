#!/usr/bin/env python3
"""PyTorch's MLP Adam step beside hcq's, measured in the same run (issue 16's yardstick).

The step is `hcq bench`'s train.mlp_step_ms: the MLP 784-128-10 (ReLU), cross entropy, backward and one Adam step
(lr 1e-3) on a fixed batch of 128, the loss read back. PyTorch runs it eagerly (its usual training loop) on as many
threads as the CPU device has workers (HCQ_CPU_THREADS, else the number of cores); the figure is the median of
--steps steps after --warmup. Then `build/tools/hcq bench --device CPU --json` runs (or the --hcq binary; add
--quick for its short form) and its train.mlp_step_ms is printed beside PyTorch's.

Needs Debian's python3-torch and libopenblas0-pthread (without an optimised BLAS, Debian's torch runs its products
on the reference BLAS, ten times slower); exits with status 2 and a message naming the package when one is missing.
Neither is installed by scripts/setup.sh: CI does not need them.

usage: scripts/torch_step.py [--steps N] [--warmup N] [--hcq PATH] [--quick] [--torch-only]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's python3-torch installs for the system interpreter


def import_torch():
    try:
        import torch  # noqa: F401
        return torch
    except ImportError:
        # A pyenv or venv python on PATH does not see Debian's dist-packages: retry once with the system one.
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.path.exists(SYSTEM_PYTHON):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
        sys.exit("torch_step: PyTorch is not installed for this python: apt-get install -y python3-torch")


def check_openblas():
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread"):
        sys.exit("torch_step: libopenblas0-pthread is not installed (Debian's torch would use the reference BLAS): "
                 "apt-get install -y libopenblas0-pthread")
    if "openblas" not in blas:
        sys.exit(f"torch_step: libblas.so.3 is {blas}, not OpenBLAS: "
                 "update-alternatives --config libblas.so.3-x86_64-linux-gnu")
    return blas


def workers():
    env = os.environ.get("HCQ_CPU_THREADS", "")
    return int(env) if env else os.cpu_count()


def torch_step_ms(torch, steps, warmup, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    # The same synthetic batch as tools/hcq/bench_train.cpp: pixels (k * 2654435761 mod 2^32) mod 1000 / 1000, labels k % 10.
    k = torch.arange(128 * 784, dtype=torch.int64)
    x = (((k * 2654435761) % (1 << 32)) % 1000).to(torch.float32).div(1000).reshape(128, 784)
    y = torch.arange(128, dtype=torch.int64) % 10
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    first = step()
    for _ in range(warmup):
        step()
    ms = []
    last = first
    for _ in range(steps):
        t0 = time.perf_counter()
        last = step()
        ms.append((time.perf_counter() - t0) * 1e3)
    if not last < first:
        sys.exit(f"torch_step: PyTorch's step did not train (loss {first} then {last})")
    return statistics.median(ms)


def hcq_step_ms(binary, quick):
    if not os.access(binary, os.X_OK):
        sys.exit(f"torch_step: {binary} is not built: ninja -C build tools/hcq (or scripts/bench.sh)")
    cmd = [binary, "bench", "--device", "CPU", "--json"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        doc = json.loads(out.stdout)
        return doc["devices"][0]["train"]["mlp_step_ms"], " ".join(cmd)
    except (ValueError, KeyError, IndexError, TypeError):
        sys.exit(f"torch_step: '{' '.join(cmd)}' gave no train.mlp_step_ms (status {out.returncode}):\n"
                 f"{out.stderr[-2000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--hcq", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "hcq"))
    ap.add_argument("--quick", action="store_true", help="hcq bench --quick")
    ap.add_argument("--torch-only", action="store_true", help="do not run hcq bench")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0:
        ap.error("--steps must be at least 1 and --warmup not negative")
    torch = import_torch()
    blas = check_openblas()
    threads = workers()
    torch_ms = torch_step_ms(torch, args.steps, args.warmup, threads)
    print(f"pytorch {torch.__version__} ({blas}), {threads} threads: mlp step median {torch_ms:.3f} ms "
          f"over {args.steps} steps")
    if args.torch_only:
        return
    hcq_ms, cmd = hcq_step_ms(os.path.normpath(args.hcq), args.quick)
    print(f"hcq ({cmd}): train.mlp_step_ms {hcq_ms:.3f} ms")
    print(f"ratio hcq / pytorch: {hcq_ms / torch_ms:.2f}")


if __name__ == "__main__":
    main()
