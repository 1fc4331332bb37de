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
                  "onednn_gflops", "matmul_shapes", "bf16_gflops", "onednn_bf16_gflops", "bf16_shapes", "sum_gbps",
                  "sum_loop_gbps", "sum_elements", "compile_ms", "jit"}
# The products each figure is measured at, by key, and what --quick measures under each key: [m, k, n] (the
# config's quick() in tools/hcq/bench_framework.hpp); a simulated GPU caps every dimension at 128.
MATMUL_QUICK = {"64": [64, 64, 64], "256": [256, 256, 256], "1024": [256, 256, 256], "2048": [512, 512, 512],
                "mlp": [128, 784, 128], "mlp_out": [128, 128, 10]}
BF16_QUICK = {"1024": [128, 128, 128], "2048": [256, 256, 256]}
# Each yardstick library's figures: present (positive) in a build with the library, else null with the reason.
YARDSTICKS = {"openblas": ["openblas_gflops"], "onednn": ["onednn_gflops", "onednn_bf16_gflops"]}
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
    # The per-kernel figure is a fit's slope over three sizes: on a loaded machine noise can tilt it slightly below
    # zero (a --quick run in CI's dry run: -4 ns on SIM-AMD), so it is checked as the JIT's is (below).
    check(math.isfinite(g["per_kernel_ns"]) and positive(g["eager_per_kernel_ns"]) and
          g["per_kernel_ns"] < g["eager_per_kernel_ns"], f"{device}: graph {g}")
    check(set(g["replay_us"]) == {"16", "64", "256"}, f"{device}: graph replay sizes {sorted(g['replay_us'])}")
    check_framework_json(device, d["framework"])
    t = d["train"]
    check(set(t) == {"mlp_step_ms", "schedule_us"} and set(t["schedule_us"]) == {"miss", "miss_cold", "hit"},
          f"{device}: train keys {t}")
    check(positive(t["mlp_step_ms"]) and all(positive(v) for v in t["schedule_us"].values()),
          f"{device}: train figures {t}")
    return d["framework"].get("yardsticks_unavailable", {})


def framework_figures(f):
    return [f["eager_op_us"], f["schedule_us"]["miss"], f["schedule_us"]["hit"], f["ewise_gbps"], f["ewise_loop_gbps"],
            f["sum_gbps"], f["sum_loop_gbps"], *f["matmul_gflops"].values(), *f["bf16_gflops"].values()]


def check_framework_json(device, f):
    check(FRAMEWORK_KEYS <= set(f), f"{device}: framework keys {sorted(f)}")
    check(set(f["schedule_us"]) == {"miss", "miss_cold", "hit"}, f"{device}: framework schedule_us {f['schedule_us']}")
    simulated = device.startswith("SIM-")
    cap = (lambda shape: [min(d, 128) for d in shape]) if simulated else (lambda shape: shape)
    # The CPU device also measures a product after a search (HCQ_BEAM): the "beam" key, 256^3 under --quick.
    matmul_quick = MATMUL_QUICK if simulated else {**MATMUL_QUICK, "beam": [256, 256, 256]}
    for figures, shapes, quick in (("matmul_gflops openblas_gflops onednn_gflops", "matmul_shapes", matmul_quick),
                                   ("bf16_gflops onednn_bf16_gflops", "bf16_shapes", BF16_QUICK)):
        for figure in figures.split():
            check(set(f[figure]) == set(quick), f"{device}: {figure} keys {sorted(f[figure])}")
        # Each key says what it multiplied: --quick's smaller products under the same keys.
        check(f[shapes] == {k: cap(v) for k, v in quick.items()}, f"{device}: {shapes} {f[shapes]}")
    # Every device, the simulated GPUs included, reports every framework figure.
    check(all(positive(x) for x in framework_figures(f)), f"{device}: framework {f}")
    # Each yardstick library: every figure positive, or every figure null and the reason given.
    absent = f.get("yardsticks_unavailable", {})
    check(set(absent) <= set(YARDSTICKS) and all(isinstance(v, str) and v for v in absent.values()),
          f"{device}: yardsticks_unavailable {absent}")
    for library, figures in YARDSTICKS.items():
        values = [v for figure in figures for v in f[figure].values()]
        if library in absent:
            check(all(v is None for v in values), f"{device}: {library} absent ({absent[library]}) but {values}")
        else:
            check(all(positive(v) for v in values), f"{device}: {library} figures {values}")
    if "onednn" not in absent:  # the kernels oneDNN chose for the "1024" products, fp32 and bf16
        check(set(f["onednn_impl"]) == {"fp32", "bf16"} and all(f["onednn_impl"].values()),
              f"{device}: onednn_impl {f.get('onednn_impl')}")
    # A hit only looks the schedule up; a miss builds it.
    check(f["schedule_us"]["hit"] < f["schedule_us"]["miss"], f"{device}: schedule_us {f['schedule_us']}")
    # --quick's elementwise and sum sizes (a simulated GPU's always).
    check(f["ewise_elements"] == 4 << 20 and f["sum_elements"] == 4 << 20, f"{device}: framework sizes {f}")
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
    m = f["multi"]
    if "unavailable" not in m:  # the data-parallel step over the device and its peer, and on the device alone
        check(positive(m["dp_step_ms"]["devices"]) and positive(m["dp_step_ms"]["one"]),
              f"{device}: multi dp_step_ms {m.get('dp_step_ms')}")
        # The bound is the exchange then the add, each measured alone: below both, and the ratios are what they say.
        check(all(positive(m[k]) for k in ("allreduce_gbps", "exchange_gbps", "combine_gbps", "bound_gbps")),
              f"{device}: multi {m}")
        check(abs(1 / m["bound_gbps"] - 1 / m["exchange_gbps"] - 1 / m["combine_gbps"]) <= 1e-4 / m["bound_gbps"],
              f"{device}: multi bound_gbps {m['bound_gbps']} is not 1 / (1/exchange + 1/combine)")
        check(abs(m["of_bound"] - m["allreduce_gbps"] / m["bound_gbps"]) <= 1e-4 * m["of_bound"],
              f"{device}: multi of_bound {m['of_bound']}")
        check(abs(m["of_peer_copy"] - m["bus_gbps"] / m["peer_copy_gbps"]) <= 1e-4 * m["of_peer_copy"],
              f"{device}: multi of_peer_copy {m['of_peer_copy']}")
    j = f["jit"]
    check(set(j) == JIT_KEYS, f"{device}: jit keys {sorted(j)}")
    # A replay's fixed cost and a kernel launched eagerly are positive; a replayed kernel's slope is a fit (noise may
    # tilt it slightly below zero), but it is far below an eager kernel's.
    check(positive(j["fixed_us"]) and positive(j["eager_per_kernel_ns"]) and math.isfinite(j["per_kernel_ns"]),
          f"{device}: jit {j}")
    check(j["per_kernel_ns"] < j["eager_per_kernel_ns"], f"{device}: jit per kernel not below eager: {j}")


# Framework rows whose metric is two words: the figure and its part or key.
TWO_WORD_ROWS = {"compile_ms", "jit", "matmul_gflops", "openblas_gflops", "onednn_gflops", "bf16_gflops",
                 "onednn_bf16_gflops", "onednn_impl", "yardstick", "multi"}


def check_table(hcq, device, copy_target, absent):
    table = bench(hcq, device).splitlines()
    rows = [line for line in table if line.split()[1:2] == ["copy_gbps"]]
    check(len(rows) == 3, f"{device}: three copy rows in the table, got {rows}")
    for row in rows:
        check(f">= {copy_target}% memcpy" in row, f"{device}: copy target {copy_target}% in {row!r}")
    matmul_keys = list(MATMUL_QUICK) + ([] if device.startswith("SIM-") else ["beam"])
    fw_rows = {" ".join(line.split()[2:4]) if line.split()[2] in TWO_WORD_ROWS else line.split()[2]: line
               for line in table if line.split()[1:2] == ["fw"]}
    # Each framework figure beside its target (met or not: the test checks what is reported, not the speed), or
    # beside its yardstick.
    targets = {"eager_op_us": "<= 10 us", "schedule_us": "<= ", "ewise_gbps": ">= 90% loop",
               "ewise_loop_gbps": "(yardstick)", "sum_gbps": ">= 90% loop", "sum_loop_gbps": "(yardstick)",
               "compile_ms cold": "(per kernel)", "compile_ms cold_serial": "(per kernel)",
               "compile_ms cached": "(per kernel)", "jit fixed_us": "<= 2 us", "jit per_kernel_ns": "<= 50 ns",
               "jit eager_per_kernel_ns": "(yardstick)",
               # The allreduce over the device and its peer beside one peer copy; the forced algorithms' rows say
               # which one automatic chose.
               "multi allreduce_gbps": ">= 80% bound", "multi bound_gbps": "(exchange ",
               "multi peer_copy_gbps": "(yardstick)", "multi direct_gbps": "",
               "multi ring_gbps": "", "multi dp_step_ms": "(same batch of 128)"}
    # The float32 1024^3 and 2048^3 products against half the faster library, bf16 against 30 % of oneDNN's; the
    # other shapes are beside the libraries without a target.
    for key in matmul_keys:
        targets[f"matmul_gflops {key}"] = ">= 50% best" if key in ("1024", "2048", "beam") else "(no target)"
        targets[f"openblas_gflops {key}"] = "(yardstick)"
        targets[f"onednn_gflops {key}"] = "(yardstick)"
    for key in BF16_QUICK:
        targets[f"bf16_gflops {key}"] = ">= 30% best"
        targets[f"onednn_bf16_gflops {key}"] = "(yardstick)"
    rows = set(targets)
    # A library the build lacks says so on a row of its own; one it has names the kernels oneDNN chose.
    if absent:
        rows.add("yardstick absent")
    if "onednn" not in absent:
        rows.add("onednn_impl 1024")
    check(set(fw_rows) == rows, f"{device}: framework rows {sorted(fw_rows)}, expected {sorted(rows)}")
    for metric, target in targets.items():
        check(target in fw_rows[metric], f"{device}: {metric} target {target!r} in {fw_rows[metric]!r}")
    check("x serial)" in fw_rows["compile_ms cold"], f"{device}: compile speed-up in {fw_rows['compile_ms cold']!r}")
    check("% loop)" in fw_rows["ewise_gbps"] and "% loop)" in fw_rows["sum_gbps"],
          f"{device}: framework figures beside their yardsticks: {fw_rows}")
    # Each product beside the faster library, named (bf16: oneDNN, the only one), when there is one.
    for key in matmul_keys:
        row = fw_rows[f"matmul_gflops {key}"]
        check(len(absent) == 2 or "% BLAS)" in row or "% oneDNN)" in row, f"{device}: no ratio in {row!r}")
    for key in BF16_QUICK:
        row = fw_rows[f"bf16_gflops {key}"]
        check("onednn" in absent or "% oneDNN)" in row, f"{device}: no ratio in {row!r}")
    schedule = [line for line in table if "fw schedule_us" in line]
    check(len(schedule) == 3 and "<= 1000 us" in schedule[0] and "(no kernel cached)" in schedule[1] and
          "<= 20 us" in schedule[2],
          f"{device}: schedule_us rows {schedule}")
    # The footer names each key's product: --quick's "1024" is 256^3.
    check(any(" 1024=256x256x256 " in line for line in table), f"{device}: no matmul shapes in the footer")


def main():
    hcq = sys.argv[1]
    absent = {}
    for device in DEVICES:
        absent = check_json(hcq, device)
    # Copies reach 80 % of memcpy on the CPU device and 50 % on the simulated GPUs, whose copy engine is a host
    # thread beside the host's own memcpy.
    check_table(hcq, "CPU", 80, absent)
    check_table(hcq, "SIM-AMD:gfx1100", 50, absent)
    check_table(hcq, "SIM-NV:hopper", 50, absent)
    print("bench_json_test: ok")


if __name__ == "__main__":
    main()
