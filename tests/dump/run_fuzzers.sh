#!/usr/bin/env bash
# Builds the command-stream decoders' and the cubin loader's libFuzzer targets with clang (in build-fuzz/) and runs
# each for a bounded time, seeded with the golden vectors (the cubin loader: with the cubins NVRTC compiled into the
# compile cache, when there are any). Exits non-zero when a fuzzer finds a crash (its reproducer is in
# build-fuzz/fuzz/).
#
# usage: tests/dump/run_fuzzers.sh [SECONDS]   SECONDS per target, default 4 (nine targets)
# environment: HCQ_JOBS (default 2) build parallelism; HCQ_FUZZ_BUILD (default build-fuzz) the build directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

seconds=${1:-4}
jobs=${HCQ_JOBS:-2}
dir=${HCQ_FUZZ_BUILD:-build-fuzz}
cxx=$(command -v clang++-19 || command -v clang++ || true)
if [[ -z $cxx ]]; then
  echo "run_fuzzers: no clang++ found; the fuzz targets need clang (skipped)"
  exit 0
fi

targets=(pm4 sdma aql nv-push gpfifo qmd capture bundle cubin)
# The capture and bundle readers' targets live in tests/dump_live; their seeds are the text files there.
target_path() {
  case $1 in
    capture | bundle) echo "tests/dump_live/dump-fuzz-$1" ;;
    cubin) echo "tests/nv_cubin/nv-cubin-fuzz" ;;
    *) echo "tests/dump/dump-fuzz-$1" ;;
  esac
}
if [[ ! -f $dir/build.ninja ]]; then
  CXX=$cxx CC=${cxx/++/} meson setup "$dir" -Dbuildtype=debugoptimized -Dbenchmarks=disabled >/dev/null
fi
if ! ninja -C "$dir" -j "$jobs" $(for t in "${targets[@]}"; do target_path "$t"; done) >"$dir/fuzz-build.log" 2>&1; then
  echo "run_fuzzers: building the fuzz targets failed; the end of $dir/fuzz-build.log:"
  grep -v '^\[' "$dir/fuzz-build.log" | tail -20
  exit 1
fi

# Seeds: the vectors' words behind a first byte of 0 (the byte that picks the target or architecture).
vectors=../shared/vectors
mkdir -p "$dir/fuzz"
status=0
for t in "${targets[@]}"; do
  corpus=$dir/fuzz/corpus-$t
  mkdir -p "$corpus"
  case $t in
    capture | bundle)
      cp tests/dump_live/fuzz_seeds/* "$corpus"/
      glob=/nonexistent ;;
    cubin)
      # Real cubins: the payloads of NVRTC entries in the compile cache (hcq/compile_cache.cpp's layout), a few.
      python3 - "${HCQ_CACHE_DIR:-$HOME/.cache/hcq}" "$corpus" <<'PY'
import glob, os, struct, sys
cache, corpus = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(cache, "*.hcqc"))):
    b = open(path, "rb").read()
    if len(b) < 24 or b[:8] != b"HCQCACHE":
        continue
    klen = struct.unpack_from("<Q", b, 16)[0]
    if not b[24:24 + klen].startswith(b"NVRTC") or len(b) < 32 + klen:
        continue
    plen = struct.unpack_from("<Q", b, 24 + klen)[0]
    payload = b[32 + klen:32 + klen + plen]
    if payload[:4] == b"\x7fELF":
        open(os.path.join(corpus, "seed-%d.cubin" % n), "wb").write(payload)
        n += 1
    if n == 8:
        break
PY
      glob=/nonexistent ;;
    pm4 | aql) glob="$vectors/amd/*/pm4_*.bin" ;;
    sdma) glob="$vectors/amd/*/sdma_*.bin" ;;
    *) glob="$vectors/nv/*.bin" ;;
  esac
  for f in $glob; do
    [[ -f $f ]] || continue
    { printf '\0'; cat "$f"; } >"$corpus/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  if (cd "$dir/fuzz" && "../$(target_path "$t")" -max_total_time="$seconds" -rss_limit_mb=1024 -print_final_stats=1 \
        -artifact_prefix="crash-$t-" "corpus-$t" >"log-$t.txt" 2>&1); then
    echo "   fuzz $t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$dir/fuzz/log-$t.txt" || tail -1 "$dir/fuzz/log-$t.txt")"
  else
    echo "   fuzz $t: FAILED (log $dir/fuzz/log-$t.txt)"
    tail -30 "$dir/fuzz/log-$t.txt"
    status=1
  fi
done
exit $status
