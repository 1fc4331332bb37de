#!/usr/bin/env bash
# The installed tree works for a program outside this project: installs a build into a temporary directory
# (meson install --destdir), builds tests/install/consumer.cpp against it through pkg-config only, and runs it.
#   - with hcq-cpu.pc: the program opens CPU:0, runs a kernel, and finds the AMD and simulator backends not linked;
#     neither its link line nor its symbols hold anything of LLVM or the simulators;
#   - with hcq.pc: the same program links the whole stack (the simulators' symbols are there);
#   - the installed core library needs nothing of the layers above it (no driver, no registry).
# Prints one line and exits 0 on success; on failure prints what went wrong and exits 1.
#
# usage: tests/install/consumer_test.sh [BUILD_DIR]      (default: build)
# environment: HCQ_JOBS (default 2) build parallelism, should the build directory need regenerating; CXX (default c++)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
start=$SECONDS
build=${1:-build}
cxx=${CXX:-c++}
work=$(mktemp -d "${TMPDIR:-/tmp}/hcq-consumer-XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "consumer_test: $*" >&2
  exit 1
}

# The .pc files must find the tree they are installed in (pkgconfig.relocatable is a project default, which a build
# directory set up before it became one does not have yet).
option() {
  meson introspect --buildoptions "$build" |
    python3 -c "import json, sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == sys.argv[1]))" "$1"
}
if [[ $(option pkgconfig.relocatable) != True ]]; then
  meson configure "$build" -Dpkgconfig.relocatable=true >/dev/null
fi
ninja -C "$build" -j "${HCQ_JOBS:-2}" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "build failed"; }

root=$work/root
meson install -C "$build" --destdir "$root" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "meson install failed"; }
prefix=$root$(option prefix)
libdir=$(option libdir)
[[ $libdir == /* ]] || libdir=$(option prefix)/$libdir
PKG_CONFIG_PATH=$root$libdir/pkgconfig
export PKG_CONFIG_PATH

for f in include/hcq/hcq.hpp include/hcq/backend/os.hpp bin/hcq bin/hcq-dump; do
  [[ -e $prefix/$f ]] || fail "meson install did not install $f"
done

# The core knows no backend: every hcq symbol libhcq-core.a needs, it defines itself (the registry, which knows the
# backends, is a layer above it).
core=$root$libdir/libhcq-core.a
[[ -f $core ]] || fail "meson install did not install libhcq-core.a"
nm -C --defined-only "$core" | sed -n 's/^[0-9a-f]* [A-Za-z] //p' | sort -u >"$work/core.defined"
nm -C --undefined-only "$core" | sed -n 's/^ *U //p' | grep 'hcq::' | sort -u >"$work/core.needed" || true
comm -23 "$work/core.needed" "$work/core.defined" >"$work/core.missing"
if [[ -s $work/core.missing ]]; then
  fail "libhcq-core.a needs $(wc -l <"$work/core.missing") hcq symbols from other layers, e.g. $(head -3 "$work/core.missing")"
fi

# build <package> <binary>: compiles and links the consumer with nothing but what pkg-config says.
build() {
  local flags
  flags=$(pkg-config --cflags --libs "$1") || fail "pkg-config $1 failed"
  echo "$flags" >"$work/$2.flags"
  # shellcheck disable=SC2086  # the flags are words
  "$cxx" -std=c++20 -O1 tests/install/consumer.cpp $flags -o "$work/$2" >"$work/$2.log" 2>&1 ||
    { cat "$work/$2.log"; fail "building against $1.pc failed (flags: $flags)"; }
}

build hcq-cpu consumer-cpu
if grep -qiE 'llvm|drm' "$work/consumer-cpu.flags"; then
  fail "hcq-cpu.pc links LLVM or libdrm: $(cat "$work/consumer-cpu.flags")"
fi
if nm -C "$work/consumer-cpu" | grep -E 'llvm::|hcq::sim::|hcq::amd::|hcq::nv::' >"$work/leaks.txt"; then
  fail "the CPU-only program holds $(wc -l <"$work/leaks.txt") symbols of LLVM or the GPU backends, e.g. $(head -3 "$work/leaks.txt")"
fi
if ldd "$work/consumer-cpu" | grep -i llvm; then fail "the CPU-only program loads LLVM: $(ldd "$work/consumer-cpu")"; fi
out_cpu=$("$work/consumer-cpu" --expect-not-linked SIM-AMD:gfx942 2>&1) || fail "the CPU-only program failed: $out_cpu"
out_amd=$("$work/consumer-cpu" --expect-not-linked AMD 2>&1) || fail "the CPU-only program failed: $out_amd"

build hcq consumer-full
nm -C "$work/consumer-full" >"$work/consumer-full.nm"  # to a file: grep -q would end nm with SIGPIPE
grep -q 'hcq::sim::' "$work/consumer-full.nm" || fail "the program built from hcq.pc has no simulator in it"
out_full=$("$work/consumer-full" 2>&1) || fail "the program built from hcq.pc failed: $out_full"

# The README's framework example, against hcq-cpu.pc: it must print the values computed by hand.
flags=$(pkg-config --cflags --libs hcq-cpu)
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++20 -O1 tests/install/tensor_example.cpp $flags -o "$work/tensor-example" >"$work/tensor.log" 2>&1 ||
  { cat "$work/tensor.log"; fail "building the README's tensor example against hcq-cpu.pc failed"; }
out_tensor=$(HCQ_CACHE_DIR=$work/cache "$work/tensor-example" 2>&1) || fail "the tensor example failed: $out_tensor"
[[ $out_tensor == "6 16.5 " ]] || fail "the tensor example printed '$out_tensor', not '6 16.5 '"

echo "ok: installed, built against hcq-cpu.pc (no LLVM, no simulators) and hcq.pc, both ran, the tensor example computed, $((SECONDS - start)) s"
