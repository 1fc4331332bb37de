#!/usr/bin/env bash
# The first thing to run: installs what is missing (the Fashion-MNIST package included), builds optimised (build/),
# and trains a model with `hcq train` on the CPU device, or on the device --device names. Arguments go to
# `hcq train` (--model mlp|cnn, --epochs N, --device D, --json, --plot FILE, --save FILE; `hcq help train`).
#
# usage: scripts/train.sh [hcq train options]     environment: HCQ_JOBS (default 2) build parallelism
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh

# The same options as scripts/bench.sh and the release step of scripts/test.sh: switching never rebuilds everything.
log=.cache/logs/build.log  # .cache/ is git-ignored
mkdir -p .cache/logs
if [[ -f build/build.ninja ]]; then
  meson setup --reconfigure build -Dbuildtype=release -Dwerror=true >"$log" 2>&1 || { cat "$log"; exit 1; }
else
  meson setup build -Dbuildtype=release -Dwerror=true >"$log" 2>&1 || { cat "$log"; exit 1; }
fi
ninja -C build -j "${HCQ_JOBS:-2}" tools/hcq >>"$log" 2>&1 || { grep -v '^\[' "$log" | tail -60; exit 1; }

exec build/tools/hcq train "$@"
