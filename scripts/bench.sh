#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds optimised (build/), lists the devices and runs
# `hcq bench` on every device that opens, printing a table. Arguments go to `hcq bench` (--json, --quick,
# --device D).
#
# usage: scripts/bench.sh [hcq bench options]     environment: HCQ_JOBS (default 2) build parallelism
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh

# The same options as the release step of scripts/test.sh, so switching between the two never rebuilds everything.
log=.cache/logs/build.log  # .cache/ is git-ignored
mkdir -p .cache/logs
if [[ -f build/build.ninja ]]; then
  meson setup --reconfigure build -Dbuildtype=release -Dwerror=true >"$log" 2>&1 || { cat "$log"; exit 1; }
else
  meson setup build -Dbuildtype=release -Dwerror=true >"$log" 2>&1 || { cat "$log"; exit 1; }
fi
ninja -C build -j "${HCQ_JOBS:-2}" tools/hcq >>"$log" 2>&1 || { grep -v '^\[' "$log" | tail -60; exit 1; }

# Machine-readable output stays clean: the device list only goes with the table.
if [[ " $* " != *" --json "* ]]; then
  build/tools/hcq info || true
  echo
fi
exec build/tools/hcq bench "$@"
