#!/usr/bin/env bash
# The first thing to run: installs what is missing (the Fashion-MNIST package included), builds optimised (build/),
# and trains a model with `hcq train` on the CPU device, or on the device --device names. Arguments go to
# `hcq train` (--model mlp|cnn, --epochs N, --device D, --json, --plot FILE, --save FILE; `hcq help train`).
#
# usage: scripts/train.sh [hcq train options]     environment: HCQ_JOBS (default 2) build parallelism
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh

. scripts/lib/release_build.sh
release_build tools/hcq

exec build/tools/hcq train "$@"
