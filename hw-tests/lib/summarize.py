#!/usr/bin/env python3
"""summary.md of one hw-tests run, from what run.sh left in its output directory.

usage: summarize.py VENDOR OUT_DIR ELAPSED_S   prints summary.md
       summarize.py --status VENDOR OUT_DIR    exit 0 when every suite ran and passed and every bench finished
"""
import glob
import json
import os
import sys


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def suites(out):
    """[(name, status record, gtest JSON or None)] per conformance suite, in name order."""
    result = []
    for status_path in sorted(glob.glob(os.path.join(out, "conformance", "*.status.json"))):
        status = load_json(status_path) or {"suite": os.path.basename(status_path), "status": "unreadable"}
        report = load_json(status_path.replace(".status.json", ".json"))
        result.append((status["suite"], status, report))
    return result


def tests_of(report):
    for suite in (report or {}).get("testsuites", []):
        for t in suite.get("testsuite", []):
            yield suite.get("name", "?") + "." + t.get("name", "?"), t


def verdict(t):
    if t.get("failures"):
        return "failed"
    if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
        return "skipped"
    return "passed"


def flatten(prefix, value, rows):
    """Bench JSON -> (metric, value) rows: nested objects become dotted names."""
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(f"{prefix}.{k}" if prefix else k, v, rows)
    elif isinstance(value, list):
        if value:
            rows.append((prefix, "; ".join(str(v) for v in value)))
    else:
        rows.append((prefix, "null (not measured)" if value is None else
                     (f"{value:.3f}" if isinstance(value, float) else str(value))))


def bench_files(out):
    return sorted(glob.glob(os.path.join(out, "bench-*.json")))


def summary(vendor, out, elapsed):
    lines = [f"# hw-tests/{vendor}: run summary", ""]
    lines += ["## Machine", "", "```", read(os.path.join(out, "machine.txt")).rstrip(),
              read(os.path.join(out, "probe.txt")).rstrip(), "```", ""]
    lines += [f"Total time: {elapsed} s. Commands: `hw-tests/{vendor}/run.sh` (conformance per suite with "
              "`HCQ_CONFORMANCE_DEVICES`, gtest JSON in `conformance/`; the framework's suites per device with "
              "`HCQ_DEVICE`, as suite `Framework-<device>` there; `hcq info --json` in `info.json`; "
              "`hcq bench --device D --json` in `bench-<D>.json`).", ""]

    totals = {"passed": 0, "failed": 0, "skipped": 0}
    rows, failures = [], []
    for name, status, report in suites(out):
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for full, t in tests_of(report):
            v = verdict(t)
            counts[v] += 1
            if v == "failed":
                msgs = [f.get("failure", "").strip() for f in t["failures"]]
                failures.append((full, "\n".join(msgs)))
        for k in totals:
            totals[k] += counts[k]
        note = status["status"] if status["status"] != "ran" else ("" if report else "no gtest report")
        if status["status"].startswith("timed out"):
            tail = read(os.path.join(out, "conformance", name + ".log")).strip().splitlines()[-15:]
            failures.append((name + " (whole suite)", status["status"] + "; last output:\n" + "\n".join(tail)))
        rows.append(f"| {name} | {counts['passed']} | {counts['failed']} | {counts['skipped']} | {note} |")
    lines += ["## Conformance", "",
              f"**{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped**", "",
              "| suite | passed | failed | skipped | note |", "|---|---|---|---|---|"] + rows + [""]
    if failures:
        lines += ["### Failures", ""]
        for full, msg in failures:
            lines += [f"- `{full}`", "", "```", msg[:4000], "```", ""]

    lines += ["## hcq info", ""]
    info = load_json(os.path.join(out, "info.json"))
    if info is None:
        lines += ["no JSON (exit " + read(os.path.join(out, "info.exit"), "?").strip() + "): " +
                  read(os.path.join(out, "info.stderr")).strip()[:2000], ""]
    else:
        for d in info.get("devices", []):
            lines.append(f"- {d.get('name')}: {d.get('arch')}, {d.get('memory_bytes', 0) / 2**30:.1f} GiB, "
                         f"{d.get('compute_queues')} compute + {d.get('copy_queues')} copy queues, "
                         f"driver {d.get('driver_version')}")
        for u in info.get("unavailable", []):
            lines.append(f"- not available: {u.get('device')}: {u.get('reason')}")
        lines.append("")

    lines += ["## hcq bench", ""]
    for path in bench_files(out):
        dev = os.path.basename(path)[len("bench-"):-len(".json")]
        doc = load_json(path)
        code = read(path.replace(".json", ".exit"), "?").strip()
        if doc is None:
            lines += [f"### {dev}: no JSON (exit {code})", "", "```",
                      read(path.replace(".json", ".stderr")).strip()[-3000:], "```", ""]
            continue
        for d in doc.get("devices", []):
            lines += [f"### {d.get('name', dev)} (exit {code})", "", "| metric | value |", "|---|---|"]
            rows = []
            flatten("", {k: v for k, v in d.items() if k != "name"}, rows)
            lines += [f"| {k} | {v} |" for k, v in rows] + [""]
    return "\n".join(lines) + "\n"


def status_ok(out):
    ok = True
    for _, status, report in suites(out):
        ok = ok and status["status"] == "ran" and report is not None and status.get("exit") == 0
        ok = ok and all(verdict(t) != "failed" for _, t in tests_of(report))
    for path in bench_files(out):
        ok = ok and read(path.replace(".json", ".exit")).strip() == "0"
    return ok and bool(suites(out))


def main(argv):
    if len(argv) == 4 and argv[1] == "--status":
        return 0 if status_ok(argv[3]) else 1
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(summary(argv[1], argv[2], argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
