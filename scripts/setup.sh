#!/usr/bin/env bash
# Installs what hcq needs to build and test on Debian 12 (bookworm), and nothing else.
# Idempotent: when everything is present it prints nothing and touches nothing. The package index is refreshed
# (apt-get update) at most once, and only when something is missing. Runs as root directly, otherwise through sudo.
set -euo pipefail

# Everything the build, the tests, the CPU device's kernel compiler and the scripts use.
packages=(
  meson ninja-build pkg-config python3
  g++ clang-19 lld-19 llvm-19-dev
  libclang-rt-19-dev  # libFuzzer and the sanitizer runtimes the fuzz targets link (clang-19 only recommends it)
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libdrm-dev libpciaccess-dev
  coreutils  # timeout(1), used by scripts/test.sh to bound each test run
  libopenblas-dev  # the yardstick of the framework's matmul figure in hcq bench (tools/hcq/bench_framework.cpp)
  libdnnl-dev  # oneDNN: the framework's second matmul yardstick, fp32 and bf16 (optional to the build: null without)
  clang-format-19  # scripts/format.sh and its check in scripts/test.sh; LLVM 19, as the compilers above
  zlib1g-dev  # zlib, which inflates the dataset's gzip'd idx files (framework/data/gzip.cpp)
  dataset-fashion-mnist  # Fashion-MNIST for `hcq train`, in /usr/share/datasets/fashion-mnist (include/hcq/datasets.hpp)
)

missing=()
for pkg in "${packages[@]}"; do
  # dpkg -s succeeds for removed-but-configured packages too; require the "install ok installed" state.
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

# sudo drops the environment, so the non-interactive frontend is passed through env(1) either way.
if [[ $(id -u) -eq 0 ]]; then
  as_root=(env DEBIAN_FRONTEND=noninteractive)
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
else
  echo "setup: missing packages (${missing[*]}) and not root, and sudo is not installed" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
