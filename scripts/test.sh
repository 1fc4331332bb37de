#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. release build, warnings as errors (build/)        -> every test, then the framework's suites on every simulated
#                                                            GPU (all of them on SIM-AMD gfx942, gfx1100 and SIM-NV
#                                                            hopper; all but the op value suites on SIM-AMD gfx1201,
#                                                            SIM-NV ampere and blackwell), then the `hcq` tool's
#                                                            tests/tools scripts,
#                                                            then tests/install (install, build a program against it),
#                                                            then clang's thread-safety analysis of hcq/,
#                                                            then the formatting check (scripts/format.sh --check)
#   2. AddressSanitizer + UBSan build (build-asan/)       -> every test
#   3. ThreadSanitizer build (build-tsan/)                -> every test but those TSAN_EXCLUDE names and the op value
#                                                            checks its build leaves out
#   4. the decoders' libFuzzer targets, 4 s each (build-fuzz/, clang; skipped without clang)
# and ends with one line "N passed, N failed", summed over every run; the exit status is non-zero on any failure.
#
# usage: scripts/test.sh [--quick]      --quick: only step 1
# environment: HCQ_JOBS (default 2) build parallelism, and test processes (shards, simulated GPUs) at once;
#              HCQ_TEST_TIMEOUT (default 900) seconds per test run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  -h | --help)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "test.sh: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

scripts/setup.sh

jobs=${HCQ_JOBS:-2}
run_timeout=${HCQ_TEST_TIMEOUT:-900}

# ThreadSanitizer runs every test, so a new subsystem's tests are checked for races without anyone listing them. What
# it leaves out is listed here, each with its reason; a gtest negative filter (one pattern per entry) is built from it.
# (Its build also leaves out one family of files, the op value checks: tests/framework_ops/meson.build says why.)
TSAN_EXCLUDE=(
  # Byte-flip, truncation and random-mutation sweeps over the single-threaded parsers (code objects, cubins, the AMD
  # and NVIDIA command-stream decoders): thousands of parses and no thread, about a minute under TSan. ASan and the
  # fuzz targets cover them.
  'CodeObjectMalformed.*'
  'CubinHostile.*'
  '*DecodeRobustness.*'
  # hcq-dump trace preloads libhcq-trace.so into an unsanitized probe program: a TSan-built shim brings a TSan runtime
  # that cannot start inside it (SEGV at start-up, before any of our code runs). Not a race; the release build runs
  # it.
  'TraceShim.LogsKfdAndRmRequestsOnANonGpuFileDecodedWithEnotty'
  # 64 MiB a device through the allreduce: the same copies and kernels as its 4 MiB sizes, which TSan does run; the
  # size only multiplies TSan's shadow memory work (15 s in a loaded release build).
  '*FrameworkMultiAllreduce.SumsSixtyFourMebibytes*'
)
TSAN_FILTER="-$(IFS=:; echo "${TSAN_EXCLUDE[*]}")"

# Sanitizer reports stop the run at once, with a stack. Options the caller set come last, so they win.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

# The compile cache is shared by every run of the suite, and kept away from the user's own (.cache/ is ignored).
export HCQ_CACHE_DIR="${HCQ_CACHE_DIR:-$PWD/.cache/hcq-test}"

# Hang bundles from the suite's timeouts and faults (and from anything else it runs) go to one temporary directory,
# removed at exit, unless the caller chose a place (docs/knobs.md).
if [[ -z "${HCQ_BUNDLE_DIR:-}" ]]; then
  HCQ_BUNDLE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hcq-test-bundles-XXXXXX")
  export HCQ_BUNDLE_DIR
  trap 'rm -rf "$HCQ_BUNDLE_DIR"' EXIT
fi

# What build() builds: everything (empty), or these ninja targets.
build_targets=()

total_passed=0
total_failed=0
script_start=$SECONDS

summary_and_exit() {
  echo "total time $((SECONDS - script_start)) s"
  echo "$total_passed passed, $total_failed failed"
  if [[ $total_failed -eq 0 ]]; then exit 0; else exit 1; fi
}

# build <dir> <meson options...>: configures (or reconfigures, when the options changed) and builds.
build() {
  local dir=$1
  shift
  local start=$SECONDS
  local log=.cache/logs/$dir.log  # .cache/ is git-ignored; the build dir may not exist yet
  mkdir -p .cache/logs
  if [[ -f $dir/build.ninja ]]; then
    meson setup --reconfigure "$dir" "$@" >"$log" 2>&1 || { cat "$log"; return 1; }
  else
    meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; return 1; }
  fi
  ninja -C "$dir" -j "$jobs" "${build_targets[@]}" >>"$log" 2>&1 || { grep -v '^\[' "$log" | tail -60; return 1; }
  echo "   built $dir in $((SECONDS - start)) s"
}

# count_results <json> <log> <exit status>: prints "passed failed skipped" for one run of hcq-tests.
# gtest writes the JSON report only when it finishes; after a crash or a timeout the log is counted instead
# (a test that started and never reported OK or SKIPPED counted as failed). A run that reported no failure but
# still exited non-zero (a leak report at exit, a crash in a destructor) counts one failure more.
count_results() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, re, sys
report, log, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
passed = failed = skipped = 0
try:
    with open(report) as f:
        doc = json.load(f)
    for suite in doc.get("testsuites", []):
        for test in suite.get("testsuite", []):
            if test.get("status") == "NOTRUN":
                continue
            if test.get("failures"):
                failed += 1
            elif test.get("result") == "SKIPPED":
                skipped += 1
            else:
                passed += 1
except (OSError, ValueError):
    text = open(log, errors="replace").read()
    started = len(re.findall(r"^\[ RUN      \]", text, re.M))
    passed = len(re.findall(r"^\[       OK \]", text, re.M))
    skipped = len(re.findall(r"^\[  SKIPPED \] \S+\.\S+", text, re.M))
    failed = max(started - passed - skipped, 0)
if status != 0 and failed == 0:
    failed = 1
print(passed, failed, skipped)
EOF
}

# run_tests <label> <build dir> [gtest args...]: runs hcq-tests, prints its failures and a one-line result.
run_tests() {
  local label=$1 dir=$2
  shift 2
  local binary=$dir/tests/hcq-tests report=$dir/test-report${shard_tag:-}.json log=$dir/test-log${shard_tag:-}.txt
  local start=$SECONDS status=0
  rm -f "$report"
  timeout --kill-after=30 "$run_timeout" "$binary" --gtest_output="json:$report" "$@" </dev/null >"$log" 2>&1 ||
    status=$?
  local passed failed skipped
  read -r passed failed skipped < <(count_results "$report" "$log" "$status")
  if [[ $failed -ne 0 ]]; then
    # The failing tests' own output, then gtest's list of them; the whole log stays in $log.
    grep -E -A40 '^\[  FAILED  \]|^(==[0-9]+==|WARNING: ThreadSanitizer|SUMMARY:)|runtime error:' "$log" | head -200 || true
    if [[ $status -eq 124 || $status -eq 137 ]]; then
      echo "   $label: timed out after $run_timeout s"
    fi
    if [[ ! -f $report ]]; then
      echo "   $label: no report (crashed?); last lines of $log:"
      tail -30 "$log"
    fi
  fi
  echo "== $label: $passed passed, $failed failed, $skipped skipped, $((SECONDS - start)) s (exit $status, log $log)"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
}

# start_run <output file> <run_tests arguments...>: runs run_tests in the background, writing to the file, once fewer
# than $jobs runs are going. finish_runs waits for them all, then prints their outputs in the order they started and
# adds up their counts.
started_outs=()
start_run() {
  local out=$1
  shift
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  run_tests "$@" >"$out" 2>&1 &
  started_outs+=("$out")
}
finish_runs() {
  wait
  local out counts passed failed
  for out in "${started_outs[@]}"; do
    cat "$out"
    counts=$(sed -n -E 's/^== .*: ([0-9]+) passed, ([0-9]+) failed, [0-9]+ skipped, [0-9]+ s \(exit .*/\1 \2/p' "$out" |
      tail -1)
    if [[ -z $counts ]]; then
      echo "== $out: the run printed no result"
      total_failed=$((total_failed + 1))
      continue
    fi
    read -r passed failed <<<"$counts"
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
  done
  started_outs=()
}

# step <label> <build dir> <meson options> -- <gtest args>
step() {
  local label=$1 dir=$2
  shift 2
  local meson_opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    meson_opts+=("$1")
    shift
  done
  if [[ $# -gt 0 ]]; then shift; fi  # the --
  echo "== $label: building $dir"
  if ! build "$dir" "${meson_opts[@]}"; then
    echo "== $label: build failed"
    total_failed=$((total_failed + 1))
    summary_and_exit
  fi
  if [[ ${shards:-1} -le 1 ]]; then
    run_tests "$label" "$dir" "$@"
    return
  fi
  # gtest's own sharding, one process per shard, $jobs at a time: the runs are mostly one busy thread each, so two
  # use CI's two cores; smaller processes, and a failure names a smaller log.
  local i
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i shard_tag="-$i" \
      start_run "$dir/test-shard-$i.out" "$label ($((i + 1))/$shards)" "$dir" "$@"
  done
  finish_runs
}

shards=2 step release build -Dbuildtype=release -Dwerror=true --
# The framework's suites again on every simulated GPU, release build only: the same tests, with HCQ_DEVICE making the
# GPU the default device (tests/framework_ops/default_device.cpp skips them when its compiler, NVRTC for SIM-NV, is
# not installed). The GPU-only ones among them (tests/framework_sched/gpu_under_test.hpp) run only here. Left out:
# the two whose expected messages name the CPU device.
FRAMEWORK_GPU_EXCLUDE=':-FrameworkOrdering.CopyBetweenDevicesOrdersKernelsOnBoth'
FRAMEWORK_GPU_EXCLUDE+=':FrameworkErrors.OutOfMemoryNamesDeviceSizeAndBytesInUse'
# Every suite (the op value suites Tensor* too) on one GPU of each kind the code generator distinguishes: a wave64
# AMD (gfx942), a wave32 AMD (gfx1100) and an NVIDIA (hopper). The other three run the framework's own suites
# (scheduler, JIT, training, several devices, GPU faults) but not the op value suites: those compute through the
# simulators' host twins, the same for every architecture of a vendor, and were half of each run's time (kernel
# compiles: 444 of 848 s on SIM-NV:ampere under load). Each architecture's compiler still builds every kernel the
# framework suites make.
FRAMEWORK_GPU_FILTER="Tensor*:*/Tensor*:Framework*:*/Framework*$FRAMEWORK_GPU_EXCLUDE"
FRAMEWORK_ONLY_FILTER="Framework*:*/Framework*$FRAMEWORK_GPU_EXCLUDE"
FRAMEWORK_GPUS=(SIM-AMD:gfx942 SIM-AMD:gfx1100 SIM-NV:hopper)
FRAMEWORK_ONLY_GPUS=(SIM-AMD:gfx1201 SIM-NV:ampere SIM-NV:blackwell)
# HCQ_JOBS runs at a time (two on CI's two cores): a cold run spends most of its time compiling, one kernel after
# another within a realize of one or two kernels (the kernels of one realize compile in parallel, but most tests
# realize one at a time), so one run leaves the second core mostly idle. Cold, one run took 46 – 74 s on a quiet
# 2-core machine; under other sessions' load (docs/testing.md) 126 – 275 s alone, and two at a time were no faster
# there, so the gain is unmeasured on a quiet machine: HCQ_JOBS=1 runs them one after another. Each run writes its
# own log and report; the counts are added here once it ends.
for gpu in "${FRAMEWORK_GPUS[@]}" "${FRAMEWORK_ONLY_GPUS[@]}"; do
  filter=$FRAMEWORK_GPU_FILTER
  if [[ " ${FRAMEWORK_ONLY_GPUS[*]} " == *" $gpu "* ]]; then filter=$FRAMEWORK_ONLY_FILTER; fi
  HCQ_DEVICE=$gpu shard_tag="-framework-${gpu//:/-}" start_run "build/test-framework-${gpu//:/-}.out" \
    "framework on $gpu" build --gtest_filter="$filter"
done
finish_runs
# check <label> <command...>: runs a script that prints one line on success, bounded by the run timeout, and counts
# it as one pass or one failure (with the end of its output).
check() {
  local label=$1 out
  shift
  if out=$(timeout --kill-after=30 "$run_timeout" "$@" </dev/null 2>&1); then
    echo "== $label: $out"
    total_passed=$((total_passed + 1))
  else
    echo "== $label FAILED:"
    echo "$out" | tail -30
    total_failed=$((total_failed + 1))
  fi
}

# The `hcq` tool's machine-readable output (tests/tools), on the release build: one check per script.
for script in tests/tools/*_test.py; do
  check "tools: $(basename "$script")" python3 "$script" build/tools/hcq
done
# The installed tree, as a program outside the project uses it (tests/install).
check "install: consumer_test.sh" tests/install/consumer_test.sh build
# Clang's thread-safety analysis of the core's locking.
check "thread-safety analysis" scripts/check_thread_safety.sh
# The sources as .clang-format lays them out (a failure names the files that differ).
check "format" scripts/format.sh --check
if [[ $quick -eq 0 ]]; then
  # Debug info and assertions on, for readable stacks and checked invariants; the microbenchmarks are not worth
  # sanitizing. The builds dominate this script's run time (the tests take minutes), so each sanitizer gets the
  # optimisation level that compiles fastest without weakening it, measured on one test file (gcc 12,
  # tests/framework_ops/reduce_test.cpp): ASan+UBSan 44 s at -O1 but 12 s at -O0 (-O1 spends the time optimising
  # UBSan's checks; the checks themselves are the same at -O0). TSan gains less (21 s at -O1 against 14 s at -O0,
  # measured under load) and its run time is what -O1 is for: ThreadSanitizer's documentation asks for -O1 or more
  # for reasonable speed, and the TSan run executes every test.
  sanitizer_build=(-Ddebug=true -Db_ndebug=false -Db_lundef=false -Dbenchmarks=disabled)
  # The sanitizer runs execute hcq-tests alone, so they build it and the programs and libraries its tests start or
  # load (the child that exits with work in flight, hcq-dump with its trace shim, the trace probe, the fake CUDA
  # drivers the CUDA adapter's tests dlopen), not the `hcq` tool, the other test
  # programs or the headers' self-containment library, which the release build covers: 150 - 200 s of CPU less per
  # build, by the ninja logs. (A clean ASan build of just these ran every test: 2317 passed.)
  build_targets=(tests/hcq-tests tests/conformance/hcq-exit-child tools/hcq-dump/hcq-dump tests/dump/trace-probe
    drivers/trace/libhcq-trace.so)
  for fake in old_driver partial_driver no_device host_gpu; do
    build_targets+=("tests/fake_libcuda/libfake_cuda_$fake.so")
  done
  # Every test, the NVIDIA backend over SIM-NV included: an ASan build puts the unified VA in ASan's shadow gap below
  # 2^40, where NVIDIA's 40-bit command-stream addresses reach it, with protect_shadow_gap=0 as its built-in default
  # (hcq/va_layout.hpp, docs/testing.md).
  shards=4 step asan+ubsan build-asan "${sanitizer_build[@]}" -Doptimization=0 -Db_sanitize=address,undefined --

  # Its build leaves out the op value checks (tests/framework_ops/meson.build): single-threaded, a quarter of its
  # compile time.
  shards=2 step tsan build-tsan "${sanitizer_build[@]}" -Doptimization=1 -Db_sanitize=thread -- \
    --gtest_filter="$TSAN_FILTER"
  # The command-stream decoders' libFuzzer targets (clang only), a few seconds each: a crash found counts as a failure.
  echo "== fuzz: decoders (tests/dump/run_fuzzers.sh)"
  if tests/dump/run_fuzzers.sh 4; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
fi
summary_and_exit
