#!/usr/bin/env python3
"""`hcq bench --quick`: the JSON document's shape and the table's targets, on the CPU device and on one simulated
GPU of each vendor. It checks what the tool reports, not how fast anything is (numbers are for `hcq bench` itself).
Usage: bench_json_test.py <path to hcq>."""
import json
import math
import subprocess
import sys

DEVICES = ["CPU", "SIM-AMD:gfx1100", "SIM-NV:hopper"]


def check(cond, what):
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def bench(hcq, device, *extra):
    run = subprocess.run([hcq, "bench", "--quick", "--device", device, *extra], capture_output=True, text=True,
                         timeout=300)
    check(run.returncode == 0, f"{device}: exit status {run.returncode}; stderr: {run.stderr[-2000:]}")
    return run.stdout


def check_json(hcq, device):
    doc = json.loads(bench(hcq, device, "--json"))
    check(set(doc) == {"devices"} and len(doc["devices"]) == 1, f"{device}: one device in {sorted(doc)}")
    d = doc["devices"][0]
    check(d["name"].startswith(device), f"{device}: name {d['name']}")
    check(d["errors"] == [], f"{device}: errors {d['errors']}")
    for key in ("launch_us", "launch_bound_us"):
        check(positive(d[key]["median"]) and d[key]["p99"] >= d[key]["median"], f"{device}: {key} {d[key]}")
    check(positive(d["enqueue_ns"]["fresh"]) and positive(d["enqueue_ns"]["bound_patched"]),
          f"{device}: enqueue_ns {d['enqueue_ns']}")
    check(positive(d["encode_ns"]), f"{device}: encode_ns {d['encode_ns']}")
    check(set(d["copy_gbps"]) == {"h2d", "d2h", "d2d"} and all(positive(v) for v in d["copy_gbps"].values()),
          f"{device}: copy_gbps {d['copy_gbps']}")
    check(positive(d["memcpy_gbps"]), f"{device}: memcpy_gbps {d['memcpy_gbps']}")
    g = d["graph"]
    check(positive(g["per_kernel_ns"]) and positive(g["eager_per_kernel_ns"]), f"{device}: graph {g}")
    check(set(g["replay_us"]) == {"16", "64", "256"}, f"{device}: graph replay sizes {sorted(g['replay_us'])}")


def check_table(hcq, device, copy_target):
    rows = [line for line in bench(hcq, device).splitlines() if "copy_gbps" in line]
    check(len(rows) == 3, f"{device}: three copy rows in the table, got {rows}")
    for row in rows:
        check(f">= {copy_target}% memcpy" in row, f"{device}: copy target {copy_target}% in {row!r}")


def main():
    hcq = sys.argv[1]
    for device in DEVICES:
        check_json(hcq, device)
    # Copies reach 80 % of memcpy on the CPU device and 50 % on the simulated GPUs, whose copy engine is a host
    # thread beside the host's own memcpy.
    check_table(hcq, "CPU", 80)
    check_table(hcq, "SIM-AMD:gfx1100", 50)
    check_table(hcq, "SIM-NV:hopper", 50)
    print("bench_json_test: ok")


if __name__ == "__main__":
    main()
