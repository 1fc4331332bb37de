#!/usr/bin/env python3
"""`hcq bench --quick`: the JSON document's shape and the table's targets, on the CPU device and on one simulated
GPU of each vendor, the framework's figures (compile_ms included) on each. It checks what the tool reports, not how fast anything is (numbers are for `hcq bench` itself).
Usage: bench_json_test.py <path to hcq>."""
import json
import math
import subprocess
import sys

DEVICES = ["CPU", "SIM-AMD:gfx1100", "SIM-NV:hopper"]
FRAMEWORK_KEYS = {"eager_op_us", "schedule_us", "ewise_gbps", "ewise_loop_gbps", "matmul_gflops", "openblas_gflops",
                  "compile_ms", "jit"}
COMPILE_KEYS = {"cold", "cached", "cold_serial", "parallel_speedup", "kernels"}
JIT_KEYS = {"per_kernel_ns", "fixed_us", "eager_per_kernel_ns"}

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
    check_framework_json(device, d["framework"])
    t = d["train"]
    check(set(t) == {"mlp_step_ms", "schedule_us"} and set(t["schedule_us"]) == {"miss", "hit"},
          f"{device}: train keys {t}")
    check(positive(t["mlp_step_ms"]) and positive(t["schedule_us"]["miss"]) and positive(t["schedule_us"]["hit"]),
          f"{device}: train figures {t}")


def framework_figures(f):
    return [f["eager_op_us"], f["schedule_us"]["miss"], f["schedule_us"]["hit"], f["ewise_gbps"], f["ewise_loop_gbps"],
            f["matmul_gflops"]["1024"], f["openblas_gflops"]["1024"]]


def check_framework_json(device, f):
    check(FRAMEWORK_KEYS <= set(f), f"{device}: framework keys {sorted(f)}")
    check(set(f["schedule_us"]) == {"miss", "hit"}, f"{device}: framework schedule_us {f['schedule_us']}")
    check(set(f["matmul_gflops"]) == {"1024"} and set(f["openblas_gflops"]) == {"1024"},
          f"{device}: framework matmul sizes {f['matmul_gflops']} {f['openblas_gflops']}")
    # Every device, the simulated GPUs included, reports every figure.
    check(all(positive(x) for x in framework_figures(f)), f"{device}: framework {f}")
    # A hit only looks the schedule up; a miss builds it.
    check(f["schedule_us"]["hit"] < f["schedule_us"]["miss"], f"{device}: schedule_us {f['schedule_us']}")
    # --quick measures the product at 256^3 under the key "1024" and says so (a simulated GPU always does).
    check(f["matmul_n"] == 256 and f["ewise_elements"] == 4 << 20, f"{device}: framework sizes {f}")
    check("unavailable" not in f, f"{device}: framework unavailable: {f.get('unavailable')}")
    c = f["compile_ms"]
    check(set(c) == COMPILE_KEYS, f"{device}: compile_ms keys {sorted(c)}")
    check(c["kernels"] == 20, f"{device}: compile_ms over {c['kernels']} kernels, expected 20")
    check(all(positive(c[k]) for k in ("cold", "cached", "cold_serial", "parallel_speedup")),
          f"{device}: compile_ms {c}")
    # A kernel the disk cache serves costs less than compiling it; the speed-up is the ratio of the two cold figures.
    check(c["cached"] < c["cold"], f"{device}: compile_ms cached {c['cached']} not below cold {c['cold']}")
    check(abs(c["parallel_speedup"] - c["cold_serial"] / c["cold"]) <= 1e-3 * c["parallel_speedup"],
          f"{device}: compile_ms parallel_speedup {c}")
    j = f["jit"]
    check(set(j) == JIT_KEYS, f"{device}: jit keys {sorted(j)}")
    # A replay's fixed cost and a kernel launched eagerly are positive; a replayed kernel's slope is a fit (noise may
    # tilt it slightly below zero), but it is far below an eager kernel's.
    check(positive(j["fixed_us"]) and positive(j["eager_per_kernel_ns"]) and math.isfinite(j["per_kernel_ns"]),
          f"{device}: jit {j}")
    check(j["per_kernel_ns"] < j["eager_per_kernel_ns"], f"{device}: jit per kernel not below eager: {j}")


def check_table(hcq, device, copy_target):
    table = bench(hcq, device).splitlines()
    rows = [line for line in table if "copy_gbps" in line]
    check(len(rows) == 3, f"{device}: three copy rows in the table, got {rows}")
    for row in rows:
        check(f">= {copy_target}% memcpy" in row, f"{device}: copy target {copy_target}% in {row!r}")
    fw_rows = {" ".join(line.split()[2:4]) if line.split()[2] in ("compile_ms", "jit") else line.split()[2]: line
               for line in table if line.split()[1:2] == ["fw"]}
    # Each framework figure beside its target (met or not: the test checks what is reported, not the speed), or
    # beside its yardstick.
    targets = {"eager_op_us": "<= 10 us", "schedule_us": "<= ", "ewise_gbps": ">= 90% loop",
               "ewise_loop_gbps": "(yardstick)", "matmul_gflops": "(no target)", "openblas_gflops": "(yardstick)",
               "compile_ms cold": "(per kernel)", "compile_ms cold_serial": "(per kernel)",
               "compile_ms cached": "(per kernel)", "jit fixed_us": "<= 2 us", "jit per_kernel_ns": "<= 50 ns",
               "jit eager_per_kernel_ns": "(yardstick)"}
    check(set(fw_rows) == set(targets), f"{device}: framework rows {sorted(fw_rows)}")
    for metric, target in targets.items():
        check(target in fw_rows[metric], f"{device}: {metric} target {target!r} in {fw_rows[metric]!r}")
    check("x serial)" in fw_rows["compile_ms cold"], f"{device}: compile speed-up in {fw_rows['compile_ms cold']!r}")
    check("% loop)" in fw_rows["ewise_gbps"] and "% BLAS)" in fw_rows["matmul_gflops"],
          f"{device}: framework figures beside their yardsticks: {fw_rows}")
    schedule = [line for line in table if "fw schedule_us" in line]
    check(len(schedule) == 2 and "<= 1000 us" in schedule[0] and "<= 20 us" in schedule[1],
          f"{device}: schedule_us rows {schedule}")
    # --quick multiplies 256^3; the table names the size.
    check("fw matmul_gflops 256" in fw_rows["matmul_gflops"], f"{device}: matmul size in {fw_rows['matmul_gflops']!r}")


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
