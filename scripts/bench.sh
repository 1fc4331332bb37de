#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds optimised (build/), lists the devices and runs
# `hcq bench` on every device that opens, printing a table. Arguments go to `hcq bench` (--json, --quick,
# --device D).
#
# usage: scripts/bench.sh [hcq bench options]     environment: HCQ_JOBS (default 2) build parallelism
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh

. scripts/lib/release_build.sh
release_build tools/hcq

# Machine-readable output stays clean: the device list only goes with the table.
if [[ " $* " != *" --json "* ]]; then
  build/tools/hcq info || true
  echo
fi
exec build/tools/hcq bench "$@"
