#!/usr/bin/env python3
"""`hcq info --json`: the document's shape, which scripts depend on. Usage: info_json_test.py <path to hcq>."""
import json
import re
import subprocess
import sys


def check(cond, what):
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)


def main():
    hcq = sys.argv[1]
    run = subprocess.run([hcq, "info", "--json"], capture_output=True, text=True, timeout=300)
    check(run.returncode in (0, 1), f"exit status {run.returncode} (0: a device opened, 1: none did)")
    doc = json.loads(run.stdout)
    check(set(doc) == {"devices", "unavailable", "pci"}, f"top-level keys {sorted(doc)}")

    device_fields = {"name": str, "interface": str, "arch": str, "memory_bytes": int, "compute_queues": int,
                     "copy_queues": int, "driver_version": str, "uuid": (str, type(None)), "launch_limits": dict,
                     "copies_on_compute": bool, "wave_size": int, "shared_memory_bytes": int, "compute_units": int,
                     "matrix_unit": str}
    check(isinstance(doc["devices"], list), "devices is a list")
    check((run.returncode == 0) == bool(doc["devices"]), "exit status 0 exactly when a device is listed")
    for d in doc["devices"]:
        name = d.get("name")
        # A CPU device also says its instruction-set features and the bf16 matmul path they give.
        cpu_fields = {"cpu_features": list, "bf16_matmul": str, "cpu_features_note": str}
        want_keys = set(device_fields) | (set(cpu_fields) if d.get("interface") == "cpu" else set())
        check(set(d) == want_keys, f"device keys {sorted(d)}")
        if d.get("interface") == "cpu":
            for k, t in cpu_fields.items():
                check(isinstance(d[k], t), f"device {name}: {k} is {t}")
            check(all(isinstance(f, str) and f for f in d["cpu_features"]), f"device {name}: feature names")
            check(d["bf16_matmul"] in ("amx", "avx512_bf16", "avx512", "avx2", "scalar"),
                  f"device {name}: bf16_matmul {d['bf16_matmul']!r}")
        for k, t in device_fields.items():
            check(isinstance(d[k], t), f"device {name}: {k} is {t}")
        # NVIDIA as nvidia-smi writes it, AMD as ROCr does; the CPU has none.
        if d["uuid"] is not None:
            nv = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
            check(re.fullmatch(rf"GPU-({nv}|[0-9a-f]{{16}})", d["uuid"]), f"device {name}: uuid {d['uuid']!r}")
        if d["interface"] == "cpu":
            check(d["uuid"] is None, f"device {name}: the CPU has no uuid")
        if d["interface"] in ("rm", "sim-rm"):
            check(d["uuid"] is not None, f"device {name}: an NVIDIA GPU has a uuid")
        limits = d["launch_limits"]
        check(set(limits) == {"max_threads_per_group", "max_local", "max_global"}, f"device {name}: launch_limits keys")
        check(isinstance(limits["max_threads_per_group"], int) and limits["max_threads_per_group"] > 0,
              f"device {name}: max_threads_per_group is a positive int")
        for k in ("max_local", "max_global"):
            check(isinstance(limits[k], list) and len(limits[k]) == 3 and
                  all(isinstance(v, int) and v > 0 for v in limits[k]), f"device {name}: {k} is three positive ints")
        check(all(v <= limits["max_threads_per_group"] for v in limits["max_local"]),
              f"device {name}: no group dim past the threads a group may have")
        # What the framework sizes kernels by. Simulated GPUs: their vendors' figures (AMD's CDNA3 and RDNA3/4
        # ISA guides and product pages, NVIDIA's CUDA programming guide and data sheets) for the GPU each simulates.
        check(d["wave_size"] in (1, 32, 64), f"device {name}: wave_size {d['wave_size']}")
        check(d["shared_memory_bytes"] > 0 and d["compute_units"] > 0, f"device {name}: shared memory and units > 0")
        want = {"SIM-AMD:gfx942": (64, 64 * 1024, 304), "SIM-AMD:gfx1100": (32, 64 * 1024, 96),
                "SIM-AMD:gfx1201": (32, 64 * 1024, 64), "SIM-NV:ampere": (32, 99 * 1024, 82),
                "SIM-NV:hopper": (32, 227 * 1024, 132), "SIM-NV:blackwell": (32, 227 * 1024, 148)}.get(name)
        if want:
            got = (d["wave_size"], d["shared_memory_bytes"], d["compute_units"])
            check(got == want, f"device {name}: wave, shared memory, units {got}, want {want}")
        if d["interface"] == "cpu":
            check(d["wave_size"] == 1, f"device {name}: the CPU runs a group's threads one after another")
        # The matrix instruction: RDNA3's and RDNA4's WMMA, CDNA3's MFMA (AMD's ISA guides), PTX mma.sync from sm_80
        # on (PTX ISA); none for the CPU device.
        want_unit = {"cpu": "none"}.get(d["interface"])
        for pattern, unit in ((r"SIM-AMD:gfx11", "wmma_gfx11"), (r"SIM-AMD:gfx12", "wmma_gfx12"),
                              (r"SIM-AMD:gfx9", "mfma_cdna3")):
            if name and re.match(pattern, name):
                want_unit = unit
        if d["interface"] in ("rm", "sim-rm"):
            want_unit = "mma_sm80"
        check(d["matrix_unit"] in ("none", "wmma_gfx11", "wmma_gfx12", "mfma_cdna3", "mma_sm80"),
              f"device {name}: matrix_unit {d['matrix_unit']!r}")
        if want_unit:
            check(d["matrix_unit"] == want_unit, f"device {name}: matrix_unit {d['matrix_unit']!r}, want {want_unit!r}")
    for u in doc["unavailable"]:
        check(set(u) == {"device", "reason"} and all(isinstance(v, str) and v for v in u.values()),
              f"unavailable entry {u}")

    pci = doc["pci"]
    check(set(pci) == {"scan_problem", "unusable"}, f"pci keys {sorted(pci)}")
    check(pci["scan_problem"] is None or (isinstance(pci["scan_problem"], str) and pci["scan_problem"]),
          "pci.scan_problem is null or a non-empty string")
    if pci["scan_problem"] is not None:
        check(pci["unusable"] == [], "no PCI findings when the bus could not be scanned")
    gpu_fields = {"pci_address": str, "vendor": str, "vendor_id": int, "device_id": int, "kernel_driver": str,
                  "reason": str}
    for g in pci["unusable"]:
        check(set(g) == set(gpu_fields), f"pci.unusable keys {sorted(g)}")
        for k, t in gpu_fields.items():
            check(isinstance(g[k], t), f"pci.unusable {g.get('pci_address')}: {k} is {t.__name__}")
        check(g["vendor_id"] in (0x1002, 0x10DE), f"vendor_id {g['vendor_id']:#x} is AMD or NVIDIA")
        check(g["reason"] != "", "a reason is given")

    # The table says the same: the scan problem, and one line per unusable GPU.
    table = subprocess.run([hcq, "info"], capture_output=True, text=True, timeout=300).stdout
    check((pci["scan_problem"] is not None) == ("PCI scan: " in table), "the table reports the scan problem")
    for g in pci["unusable"]:
        check(g["pci_address"] in table and g["reason"] in table, f"the table lists {g['pci_address']}")
    for d in doc["devices"]:
        row = re.search(rf"^{re.escape(d['name'])}\s+{d['wave_size']}\s+\S+ \S+\s+{d['compute_units']}\s+"
                        rf"{d['matrix_unit']}$", table, re.M)
        check(row is not None, f"the table shows {d['name']}'s wave size, compute units and matrix unit")
        if d["uuid"] is not None:
            check(d["uuid"] in table, f"the table shows {d['name']}'s uuid")
    print(f"ok: {len(doc['devices'])} devices, {len(doc['unavailable'])} unavailable, "
          f"{len(pci['unusable'])} unusable on PCI, scan_problem={pci['scan_problem']!r}")


if __name__ == "__main__":
    main()
