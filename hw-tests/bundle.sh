#!/usr/bin/env bash
# Builds the self-contained hw-tests bundle for a lent NVIDIA GPU machine, which has a CUDA image but no LLVM,
# GoogleTest, libpciaccess or package archive: the NV-path programs (no AMD layer, so no LLVM; libstdc++, GoogleTest
# and libpciaccess linked in; the framework and its suites, which need only NVRTC there), the hw-tests scripts, a
# compile cache holding every NV kernel the run needs on sm_90 (the lent H200's architecture), and
# a MANIFEST. Fails when the bundle is over the size limit. See docs/hw-tests.md.
#   hw-tests/bundle.sh [OUT_DIR]      (default hw-tests/bundle/)
# Knobs: HCQ_BUNDLE_BUILD_DIR (build-bundle), HCQ_BUNDLE_JOBS (2), HCQ_BUNDLE_MAX_MIB (48), HCQ_BUNDLE_TWINS (0; 1:
# keep the SIM-NV host twins for the rehearsal, hw-tests/rehearse.sh: a bundle that is never carried, so unlimited).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$REPO/hw-tests/bundle}
BUILD=${HCQ_BUNDLE_BUILD_DIR:-$REPO/build-bundle}
JOBS=${HCQ_BUNDLE_JOBS:-2}
# A run carries at most 64 MiB of ignored files; the limit leaves room for whatever else a run carries.
MAX_MIB=${HCQ_BUNDLE_MAX_MIB:-48}
TWINS=${HCQ_BUNDLE_TWINS:-0}
# The simulated GPU whose kernels go into the cache: sm_90, the lent machines' H200 (and H100). A real GPU of another
# architecture compiles its kernels with the machine's NVRTC instead (some 230 for the conformance suite and the
# bench). sm_80, sm_86 and sm_100 were cached too until 2026-12-05: 10 MiB, which the size limit no longer had.
CACHE_DEVICES=(SIM-NV:hopper)
# The framework's suites compile some 400 kernels per architecture (a minute or two each, cold): only sm_90's, for
# the lent H100/H200 and the rehearsal's SIM-NV:hopper. Another architecture compiles them with its NVRTC there.
FRAMEWORK_CACHE_DEVICES=(SIM-NV:hopper)
# scripts/test.sh's FRAMEWORK_GPU_FILTER, as hw-tests/lib/common.sh has it.
FRAMEWORK_FILTER=$(sed -n "s/^HW_FRAMEWORK_FILTER+\{0,1\}='\(.*\)'$/\1/p" "$REPO/hw-tests/lib/common.sh" | tr -d '\n')

say() { echo "[bundle] $*" >&2; }
die() { echo "[bundle] FAILED: $*" >&2; exit 1; }

# 1. The programs, in their own build directory: -Dhw_bundle adds the targets (hw-tests/meson.build) and
# prefer_static links GoogleTest and libpciaccess statically.
if [[ ! -f $BUILD/build.ninja ]]; then
  say "meson setup $BUILD"
  meson setup "$BUILD" "$REPO" --buildtype=release -Dhw_bundle=true -Dprefer_static=true -Dbenchmarks=disabled >&2
fi
targets=(hw-tests/hcq-tests hw-tests/hcq hw-tests/hcq-dump hw-tests/libhcq-trace.so hw-tests/hcq-cache-alias)
say "ninja -j$JOBS ${targets[*]}"
ninja -C "$BUILD" -j"$JOBS" "${targets[@]}" >&2

# 2. The layout. A fresh directory each time, so nothing stale rides along.
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/cache" "$OUT/hw-tests/nv" "$OUT/hw-tests/lib"
cp "$BUILD/hw-tests/hcq-tests" "$BUILD/hw-tests/hcq" "$BUILD/hw-tests/hcq-dump" "$OUT/bin/"
cp "$BUILD/hw-tests/libhcq-trace.so" "$OUT/lib/"
cp "$REPO/hw-tests/nv/run.sh" "$OUT/hw-tests/nv/"
cp "$REPO/hw-tests/lib/common.sh" "$REPO/hw-tests/lib/summarize.py" "$OUT/hw-tests/lib/"
cp "$REPO/hw-tests/README.md" "$OUT/hw-tests/"
{
  echo "commit: $(git -C "$REPO" rev-parse --short HEAD)$(
    [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no | head -1) ]] && echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(g++ --version | head -1)"
} >"$OUT/BUILD-INFO"

# 3. Dynamic libraries: only the C library's may remain (the GPU machine has nothing else of ours).
for f in "$OUT"/bin/* "$OUT"/lib/*; do
  extra=$(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
          grep -vE '^(libc|libm|libdl|libpthread|librt)\.so\.[0-9]+$|^ld-linux-x86-64\.so\.2$' || true)
  [[ -z $extra ]] || die "$(basename "$f") needs $extra, which the GPU machine lacks"
done

# 4. The compile cache: the conformance suite and `hcq bench` on each simulated GPU compile every kernel a run
# uses, with this machine's NVRTC, into the bundle's cache. NVRTC's version is part of the key, so a machine with
# the same NVRTC (13.0) reads them and one with another compiles its own.
{ ldconfig -p | grep -q 'libnvrtc\.so' || [[ -e /usr/local/cuda/lib64/libnvrtc.so.13 ]]; } ||
  die "no NVRTC here (libnvrtc.so.13): the NV kernels cannot be precompiled"
FILL_LOG=$BUILD/bundle-cache-fill.log
: >"$FILL_LOG"
for d in "${CACHE_DEVICES[@]}"; do
  say "precompiling the kernels of the conformance suite and hcq bench on $d"
  param=${d//[^A-Za-z0-9]/_}
  HCQ_CACHE_DIR=$OUT/cache "$OUT/bin/hcq-tests" --gtest_filter="Conformance/*.*/$param" >>"$FILL_LOG" 2>&1 ||
    die "the conformance suite failed on $d while filling the cache ($FILL_LOG)"
  HCQ_CACHE_DIR=$OUT/cache "$OUT/bin/hcq" bench --device "$d" >>"$FILL_LOG" 2>&1 ||
    die "hcq bench failed on $d while filling the cache ($FILL_LOG)"
done
for d in "${FRAMEWORK_CACHE_DEVICES[@]}"; do
  say "precompiling the kernels of the framework's suites on $d"
  HCQ_DEVICE=$d HCQ_CACHE_DIR=$OUT/cache "$OUT/bin/hcq-tests" --gtest_filter="$FRAMEWORK_FILTER" >>"$FILL_LOG" 2>&1 ||
    die "the framework's suites failed on $d while filling the cache ($FILL_LOG)"
done
# The simulated GPUs run each kernel as a host twin, compiled with clang for this CPU (model and flags are in the
# key). Where clang is absent, as in the rehearsal's root, the CPU compiler's identity is "clang (unavailable)"
# (drivers/cpu/cpu_compiler.cpp): with HCQ_BUNDLE_TWINS=1 the same binaries are stored under that identity too, so
# the rehearsal on this machine runs SIM-NV without clang. A real GPU needs no twins (they were 86 of the 135 MiB
# on 2026-12-05); another CPU's key differs and misses, as it should.
cc=${HCQ_CC:-$(command -v clang-19 >/dev/null && echo clang-19 || echo clang)}
cc_identity=""
if command -v "$cc" >/dev/null; then
  cc_identity="$cc $("$cc" --version | head -1)"
  if [[ $TWINS == 1 ]]; then
    aliased=$("$BUILD/hw-tests/hcq-cache-alias" "$OUT/cache" "$cc_identity" "clang (unavailable)")
    say "host twins: $aliased binaries also stored for a machine without clang"
  fi
fi
# Proof that the cache now serves them all: the same runs with every real compile refused.
for d in "${CACHE_DEVICES[@]}"; do
  param=${d//[^A-Za-z0-9]/_}
  HCQ_ASSERT_COMPILE=1 HCQ_CACHE_DIR=$OUT/cache "$OUT/bin/hcq-tests" --gtest_filter="Conformance/*.*/$param" \
    >>"$FILL_LOG" 2>&1 || die "with HCQ_ASSERT_COMPILE=1 the conformance suite fails on $d ($FILL_LOG)"
done
for d in "${FRAMEWORK_CACHE_DEVICES[@]}"; do
  HCQ_ASSERT_COMPILE=1 HCQ_DEVICE=$d HCQ_CACHE_DIR=$OUT/cache "$OUT/bin/hcq-tests" --gtest_filter="$FRAMEWORK_FILTER" \
    >>"$FILL_LOG" 2>&1 || die "with HCQ_ASSERT_COMPILE=1 the framework's suites fail on $d ($FILL_LOG)"
done

# What this machine's clang built (host twins, CPU kernels) serves no machine the bundle goes to: none has it.
if [[ -n $cc_identity ]]; then
  dropped=$("$BUILD/hw-tests/hcq-cache-alias" --drop "$OUT/cache" "$cc_identity")
  say "dropped $dropped binaries built by this machine's clang"
fi
echo "host twins: $([[ $TWINS == 1 ]] && echo yes || echo no)" >>"$OUT/BUILD-INFO"

# The NVRTC the cubins came from, for the MANIFEST (the GPU machine's must match for them to be used).
NVRTC_VERSION=$(readlink -f /usr/local/cuda 2>/dev/null | sed -n 's/.*cuda-//p')

# 5. MANIFEST: each file, its size, why it is there.
why() {
  case "$1" in
    bin/hcq-tests) echo "conformance suite (every device; real GPUs by HCQ_CONFORMANCE_DEVICES), NV cubin/NVRTC tests, the framework's suites (HCQ_DEVICE); CPU, NV and SIM-NV backends only" ;;
    bin/hcq) echo "hcq info / hcq bench with its framework section (CPU, NV, SIM-NV backends; CUDA comparison when libcuda.so.1 is there; no OpenBLAS)" ;;
    bin/hcq-dump) echo "decode command streams, trace GPU ioctls, show and replay hang bundles" ;;
    lib/libhcq-trace.so) echo "LD_PRELOAD shim of 'hcq-dump trace' (run.sh --bundle sets HCQ_TRACE_SHIM to it)" ;;
    cache/*) echo "precompiled kernel of the conformance suite, hcq bench or the framework's suites: NV cubins for sm_90 (NVRTC $NVRTC_VERSION)$([[ $TWINS == 1 ]] && echo ", and SIM-NV host twins for this CPU without clang (the rehearsal)")" ;;
    hw-tests/nv/run.sh) echo "the run: hw-tests/nv/run.sh --bundle <this directory>" ;;
    hw-tests/lib/*) echo "shared steps of run.sh and summary.md" ;;
    hw-tests/README.md) echo "what the hw-tests scripts do" ;;
    BUILD-INFO) echo "the commit and the machine the bundle was built from" ;;
    *) echo "?" ;;
  esac
}
{
  echo "# hw-tests bundle: bytes  path  why"
  echo "# Linked in: libstdc++, libgcc, GoogleTest, libpciaccess, zlib; dynamic: libc, libm (glibc >= $(
    objdump -T "$OUT"/bin/* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | cut -d_ -f2))."
  echo "# Not in it: the AMD layer (LLVM), SIM-AMD, the CPU device's kernels (its compiler is clang, absent on the"
  echo "# GPU machine: CPU:n conformance is not run there), the vector-based NV tests (they read ../shared/vectors)."
  (cd "$OUT" && find . -type f ! -name MANIFEST | sed 's|^\./||' | sort) | while read -r f; do
    printf '%10d  %s  %s\n' "$(stat -c %s "$OUT/$f")" "$f" "$(why "$f")"
  done
} >"$OUT/MANIFEST"

# 6. Checks of the bundle itself: every file is in the MANIFEST with a reason, and the whole is under the limit.
files=$(cd "$OUT" && find . -type f ! -name MANIFEST | wc -l)
listed=$(grep -vc '^#' "$OUT/MANIFEST")
(( files == listed )) || die "MANIFEST lists $listed files, the bundle holds $files"
! grep -v '^#' "$OUT/MANIFEST" | grep -q '  ?$' || die "MANIFEST has files without a reason: $(grep '  ?$' "$OUT/MANIFEST")"
(( $(find "$OUT/cache" -name "*.hcqc" | wc -l) > 0 )) || die "the compile cache is empty"
bytes=$(du -sb "$OUT" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
[[ $TWINS == 1 ]] || (( bytes <= MAX_MIB * 1048576 )) || die "the bundle is $mib MiB, over the limit of $MAX_MIB MiB"
say "bundle: $OUT, $files files, $mib MiB ($([[ $TWINS == 1 ]] && echo "with host twins, for the rehearsal: not size-checked" || echo "limit $MAX_MIB MiB"))"
