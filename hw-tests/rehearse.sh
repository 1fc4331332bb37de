#!/usr/bin/env bash
# Rehearses a lent GPU machine's run here: a bare Debian root (debootstrap --variant=minbase bookworm), the bundle
# copied into it, and `hw-tests/nv/run.sh --bundle` run inside it with chroot against a simulated GPU. It proves the
# bundle needs nothing the root lacks (no build, no apt, no LLVM, GoogleTest, libpciaccess or clang) and that the
# compile cache serves every kernel (HCQ_ASSERT_COMPILE=1). Needs root and Debian's archive; not run in CI because
# it downloads the root (cached under .cache/hw-rehearse/, so a second run takes seconds). See docs/hw-tests.md.
#   hw-tests/rehearse.sh [BUNDLE_DIR]     (default hw-tests/bundle/, made by HCQ_BUNDLE_TWINS=1 hw-tests/bundle.sh:
#                                          the simulated GPU runs its kernels as host twins, which a bundle for a
#                                          GPU machine leaves out)
# Knobs: HCQ_HW_REHEARSE_DEVICES (SIM-NV:hopper), HCQ_REHEARSE_MIRROR (http://deb.debian.org/debian).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=$(cd "${1:-$REPO/hw-tests/bundle}" 2>/dev/null && pwd) || { echo "rehearse: no bundle directory" >&2; exit 1; }
ROOT=$REPO/.cache/hw-rehearse/bookworm-minbase
MIRROR=${HCQ_REHEARSE_MIRROR:-http://deb.debian.org/debian}
DEVICES=${HCQ_HW_REHEARSE_DEVICES:-SIM-NV:hopper}
RESULTS=$REPO/hw-tests/results/rehearsal-$(date -u +%Y%m%dT%H%M%SZ)
T0=$(date +%s)

say() { echo "[rehearse +$(( $(date +%s) - T0 ))s] $*" >&2; }
die() { echo "[rehearse] FAILED: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mount)"
[[ -x $BUNDLE/bin/hcq-tests && -f $BUNDLE/MANIFEST ]] || die "$BUNDLE is not a bundle: run hw-tests/bundle.sh first"
grep -q '^host twins: yes$' "$BUNDLE/BUILD-INFO" ||
  die "$BUNDLE has no host twins for the simulated GPU: make it with HCQ_BUNDLE_TWINS=1 hw-tests/bundle.sh"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"

# 1. The root, made once. python3 is the one package added to minbase: the CUDA image has Python (summary.md is
# written by summarize.py). NVRTC is copied in where the CUDA image has it, /usr/local/cuda/lib64, because there
# it is part of the machine: the cached kernels' key names NVRTC's version, so this is what lets the cache serve.
if [[ ! -f $ROOT/.complete ]]; then
  say "debootstrap --variant=minbase --include=python3 bookworm $ROOT (once; cached)"
  rm -rf "$ROOT"
  mkdir -p "$ROOT"
  debootstrap --variant=minbase --include=python3 bookworm "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
    die "debootstrap failed ($ROOT.debootstrap.log)"
  mkdir -p "$ROOT/usr/local/cuda/lib64"
  cp -L /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/lib64/libnvrtc-builtins.so.13.* \
    "$ROOT/usr/local/cuda/lib64/" 2>/dev/null || say "no NVRTC here to copy: the NV kernels must all come from the cache"
  touch "$ROOT/.complete"
fi

# 2. The root really lacks what the bundle must not need. libstdc++6 is in minbase (apt uses it); the check is that
# its newest symbol version is what it is and that no bundled program loads it (ldd inside the root, below).
lacking=$(cd "$ROOT" && ls -d usr/lib/x86_64-linux-gnu/libgtest* usr/lib/x86_64-linux-gnu/libgmock* usr/include/gtest \
  usr/lib/x86_64-linux-gnu/libpciaccess* usr/lib/x86_64-linux-gnu/libLLVM* usr/lib/llvm-* usr/bin/clang* \
  usr/bin/gcc* usr/bin/g++* usr/bin/meson usr/bin/ninja 2>/dev/null || true)
[[ -z $lacking ]] || die "the root is not bare, it has: $lacking"
glibcxx=$(grep -ao 'GLIBCXX_[0-9.]*' "$ROOT"/usr/lib/x86_64-linux-gnu/libstdc++.so.6 | sort -uV | tail -1)
say "root: no gtest/gmock, libpciaccess, LLVM, clang, gcc, meson or ninja; its libstdc++ goes up to $glibcxx"

# 3. The bundle in, /proc and /dev mounted, unmounted on the way out whatever happens.
rm -rf "$ROOT/opt/hcq-bundle" "$ROOT/opt/hcq-out"
cp -a "$BUNDLE" "$ROOT/opt/hcq-bundle"
cleanup() {
  umount -R "$ROOT/dev" 2>/dev/null || true
  umount "$ROOT/proc" 2>/dev/null || true
}
trap cleanup EXIT
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
mount --make-rslave "$ROOT/dev"

in_root() {
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TMPDIR=/tmp \
    "$@" chroot "$ROOT" "${CMD[@]}"
}
for prog in hcq-tests hcq hcq-dump; do
  CMD=(ldd "/opt/hcq-bundle/bin/$prog")
  libs=$(in_root | awk '{print $1}' | paste -sd' ')
  [[ $libs != *libstdc++* && $libs != *pciaccess* && $libs != *gtest* ]] || die "$prog loads $libs in the root"
  say "$prog loads: $libs"
done

# 4. The run, as on the GPU machine, but on $DEVICES and with every real compile refused.
say "run.sh --bundle /opt/hcq-bundle in the root, HCQ_HW_REHEARSE_DEVICES=$DEVICES, HCQ_ASSERT_COMPILE=1"
CMD=(/opt/hcq-bundle/hw-tests/nv/run.sh --bundle /opt/hcq-bundle --out /opt/hcq-out)
rc=0
in_root HCQ_HW_REHEARSE_DEVICES="$DEVICES" HCQ_ASSERT_COMPILE=1 || rc=$?
mkdir -p "$(dirname "$RESULTS")"
cp -a "$ROOT/opt/hcq-out" "$RESULTS"
say "run.sh exited $rc; its output: $RESULTS (summary.md)"
(( rc == 0 )) || die "run.sh --bundle failed in the bare root"
say "rehearsal passed"
