# shellcheck shell=bash
# Shared steps of hw-tests/<vendor>/run.sh: arguments, build, the conformance suite per suite under a timeout, the
# framework's suites per device, `hcq info` and `hcq bench`, and summary.md. Sourced, not run. The caller sets VENDOR ("nv"/"amd") and, after its
# own probe, DEVICES (e.g. "NV:0 NV:1"), then calls hw_main_after_probe.
set -uo pipefail

HW_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HW_BUILD_DIR=""
HW_BUNDLE=""
HW_OUT=""
HW_T0=$(date +%s)
# Budgets in seconds (knobs of these scripts, documented in docs/hw-tests.md).
HW_SUITE_TIMEOUT_S=${HCQ_HW_SUITE_TIMEOUT_S:-90}      # one conformance suite on every real device
HW_CONFORMANCE_BUDGET_S=${HCQ_HW_CONFORMANCE_BUDGET_S:-300}  # all suites together
HW_BENCH_TIMEOUT_S=${HCQ_HW_BENCH_TIMEOUT_S:-180}     # `hcq bench` on one device
HW_FRAMEWORK_TIMEOUT_S=${HCQ_HW_FRAMEWORK_TIMEOUT_S:-240}  # the framework's suites on one device
# The framework's suites on a GPU: scripts/test.sh's FRAMEWORK_GPU_FILTER (keep the two the same; bundle.sh reads
# this one), the tests whose expected messages name the CPU device left out, and one more: a test of the CPU
# compiler's error message, which needs clang (absent on a GPU machine; a broken kernel is never in the cache).
HW_FRAMEWORK_FILTER='Tensor*:*/Tensor*:Framework*:*/Framework*'
HW_FRAMEWORK_FILTER+=':-FrameworkOrdering.CopyBetweenDevicesOrdersKernelsOnBoth'
HW_FRAMEWORK_FILTER+=':FrameworkErrors.OutOfMemoryNamesDeviceSizeAndBytesInUse'
HW_FRAMEWORK_FILTER+=':FrameworkErrors.CompileErrorShowsNumberedSourceBesideTheCompilerMessage'
# A hung wait becomes a TimeoutError after 10 s instead of the default 30 s, so one hang costs one test, not a suite.
export HCQ_WAIT_TIMEOUT_MS=${HCQ_WAIT_TIMEOUT_MS:-10000}

hw_usage() {
  cat <<EOF
usage: hw-tests/$VENDOR/run.sh [--build-dir DIR | --bundle DIR] [--out DIR]
  Probes for the GPU (exits 0 with "skipped: <reason>" when there is none), builds hcq-tests and hcq (reusing DIR)
  or takes them from a bundle made by hw-tests/bundle.sh (no build, no apt), runs the conformance suite on every real device, 'hcq info --json' and 'hcq bench --json' per device, and writes
  everything plus summary.md to the output directory: --out, else \$OUT, else hw-tests/results/$VENDOR-<time>.
EOF
}

hw_parse_args() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build-dir) HW_BUILD_DIR=${2:?--build-dir needs a directory}; shift 2 ;;
      --bundle) HW_BUNDLE=${2:?--bundle needs a directory}; shift 2 ;;
      --out) HW_OUT=${2:?--out needs a directory}; shift 2 ;;
      -h|--help) hw_usage; exit 0 ;;
      *) echo "run.sh: unknown argument '$1'" >&2; hw_usage >&2; exit 2 ;;
    esac
  done
  [[ -n $HW_BUILD_DIR ]] || HW_BUILD_DIR=$HW_REPO/build-hw
  if [[ -n $HW_BUNDLE ]]; then
    [[ -x $HW_BUNDLE/bin/hcq-tests ]] || { echo "run.sh: $HW_BUNDLE is not a bundle (no bin/hcq-tests)" >&2; exit 2; }
    HW_BUNDLE=$(cd "$HW_BUNDLE" && pwd)
  fi
  [[ -n $HW_OUT ]] || HW_OUT=${OUT:-$HW_REPO/hw-tests/results/$VENDOR-$(date -u +%Y%m%dT%H%M%SZ)}
  mkdir -p "$HW_OUT"
  HW_OUT=$(cd "$HW_OUT" && pwd)
  : >"$HW_OUT/probe.txt"
}

hw_log() { echo "[hw-tests $VENDOR +$(( $(date +%s) - HW_T0 ))s] $*" | tee -a "$HW_OUT/run.log" >&2; }
# Appends a line to the probe record (and shows it).
hw_note() { echo "$*" | tee -a "$HW_OUT/probe.txt" >&2; }

# Nothing to test here: say why, leave the reason in summary.md, exit 0.
hw_skip() {
  echo "skipped: $*" >>"$HW_OUT/probe.txt"
  printf '# hw-tests/%s: skipped\n\nskipped: %s\n\n## Probe\n\n```\n%s\n```\n' "$VENDOR" "$*" \
    "$(cat "$HW_OUT/probe.txt")" >"$HW_OUT/summary.md"
  echo "skipped: $*"
  exit 0
}

# Something the run cannot go on without: summary.md says what, exit 1.
hw_fail() {
  hw_log "FAILED: $*"
  printf '# hw-tests/%s: FAILED before testing\n\n%s\n\nSee run.log and build.log.\n\n## Probe\n\n```\n%s\n```\n' \
    "$VENDOR" "$*" "$(cat "$HW_OUT/probe.txt")" >"$HW_OUT/summary.md"
  exit 1
}

# The machine, for the record: kernel, CPU, memory, the checkout.
hw_machine() {
  {
    echo "kernel: $(uname -srvm)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores)"
    echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    [[ -r /etc/os-release ]] && echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
    if [[ -n $HW_BUNDLE ]]; then
      echo "hcq: bundle $HW_BUNDLE, $(paste -sd';' "$HW_BUNDLE/BUILD-INFO" 2>/dev/null || echo 'no BUILD-INFO')"
    else
      echo "hcq: $(git -C "$HW_REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
        [[ -n $(git -C "$HW_REPO" status --porcelain 2>/dev/null | head -1) ]] && echo ' (with uncommitted changes)')"
    fi
  } >"$HW_OUT/machine.txt"
}

# Build tools and libraries the build needs; scripts/setup.sh installs them (apt) when something is missing.
hw_dependencies() {
  local missing=()
  for tool in meson ninja g++ python3 timeout llvm-config-19; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [[ -e /usr/include/gtest/gtest.h && -e /usr/include/gmock/gmock.h ]] || missing+=(gtest/gmock)
  if [[ ${#missing[@]} -gt 0 ]]; then
    hw_log "missing: ${missing[*]}; running scripts/setup.sh"
    "$HW_REPO/scripts/setup.sh" >>"$HW_OUT/build.log" 2>&1 || hw_fail "missing ${missing[*]}, and scripts/setup.sh failed (build.log)"
  fi
}

hw_build() {
  hw_dependencies
  if [[ ! -f $HW_BUILD_DIR/build.ninja ]]; then
    hw_log "meson setup $HW_BUILD_DIR"
    meson setup "$HW_BUILD_DIR" "$HW_REPO" --buildtype=release -Dbenchmarks=disabled >>"$HW_OUT/build.log" 2>&1 ||
      hw_fail "meson setup failed (build.log)"
  fi
  hw_log "ninja -j$(nproc) tests/hcq-tests tools/hcq"
  ninja -C "$HW_BUILD_DIR" -j"$(nproc)" tests/hcq-tests tools/hcq >>"$HW_OUT/build.log" 2>&1 ||
    hw_fail "the build failed: $(grep -m1 -E 'error|FAILED' "$HW_OUT/build.log")"
  HW_TESTS=$HW_BUILD_DIR/tests/hcq-tests
  HW_HCQ=$HW_BUILD_DIR/tools/hcq
  hw_log "built in $(( $(date +%s) - HW_T0 ))s since start"
}

# The programs of a bundle (hw-tests/bundle.sh): nothing to build. Its compile cache is copied to a scratch
# directory, so the bundle itself may be read-only and stays as it was made.
hw_use_bundle() {
  HW_TESTS=$HW_BUNDLE/bin/hcq-tests
  HW_HCQ=$HW_BUNDLE/bin/hcq
  # A C library older than the one the bundle was linked against (its MANIFEST says which) stops every program at
  # load time: say so once, with the loader's words, rather than as a failure of every suite.
  "$HW_HCQ" --help >/dev/null 2>"$HW_OUT/bundle-start.stderr" ||
    hw_fail "the bundle's programs do not start here: $(head -1 "$HW_OUT/bundle-start.stderr")"
  export HCQ_TRACE_SHIM=$HW_BUNDLE/lib/libhcq-trace.so
  export HCQ_CACHE_DIR=${TMPDIR:-/tmp}/hcq-hw-cache.$$
  mkdir -p "$HCQ_CACHE_DIR" && cp -p "$HW_BUNDLE"/cache/* "$HCQ_CACHE_DIR"/ 2>/dev/null ||
    hw_fail "cannot copy the bundle's compile cache to $HCQ_CACHE_DIR"
  hw_log "bundle $HW_BUNDLE ($(grep -m1 '^commit' "$HW_BUNDLE/BUILD-INFO" 2>/dev/null || echo 'no BUILD-INFO')), \
cache $HCQ_CACHE_DIR ($(ls "$HCQ_CACHE_DIR" | wc -l) kernels)${HCQ_ASSERT_COMPILE:+, HCQ_ASSERT_COMPILE=$HCQ_ASSERT_COMPILE}"
}

# gtest's parameter name of a device: "NV:0" -> "NV_0".
hw_param() { echo "${1//[^A-Za-z0-9]/_}"; }

# The conformance suite on every device of $DEVICES, one gtest process per suite, each under a timeout, so that a
# hang costs that suite (recorded as timed out) and the rest still run. JSON per suite in conformance/.
hw_conformance() {
  local devices_csv filter_tail="" suites suite d param
  devices_csv=$(echo "$DEVICES" | tr ' ' ',')
  export HCQ_CONFORMANCE_DEVICES=$devices_csv
  mkdir -p "$HW_OUT/conformance"
  for d in $DEVICES; do param=$(hw_param "$d"); filter_tail+=" $param"; done
  suites=$("$HW_TESTS" --gtest_list_tests --gtest_filter='Conformance/*' 2>>"$HW_OUT/run.log" |
           grep -E '^Conformance/' | sed 's/\.$//' | sort -u)
  [[ -n $suites ]] || hw_fail "hcq-tests lists no conformance suites (run.log)"
  local deadline=$(( $(date +%s) + HW_CONFORMANCE_BUDGET_S ))
  for suite in $suites; do
    local name=${suite#Conformance/} filter="" left limit rc
    for param in $filter_tail; do filter+="${filter:+:}$suite.*/$param"; done
    left=$(( deadline - $(date +%s) ))
    if (( left < 5 )); then
      echo "{\"suite\": \"$name\", \"status\": \"not run: conformance budget of ${HW_CONFORMANCE_BUDGET_S}s spent\"}" \
        >"$HW_OUT/conformance/$name.status.json"
      hw_log "$name: not run (budget spent)"
      continue
    fi
    limit=$(( left < HW_SUITE_TIMEOUT_S ? left : HW_SUITE_TIMEOUT_S ))
    hw_log "$name on $devices_csv (timeout ${limit}s)"
    timeout --kill-after=5 "$limit" "$HW_TESTS" --gtest_filter="$filter" \
      --gtest_output="json:$HW_OUT/conformance/$name.json" >"$HW_OUT/conformance/$name.log" 2>&1
    rc=$?
    local status="ran"
    (( rc == 124 || rc == 137 )) && status="timed out after ${limit}s"
    echo "{\"suite\": \"$name\", \"status\": \"$status\", \"exit\": $rc, \"filter\": \"$filter\"}" \
      >"$HW_OUT/conformance/$name.status.json"
  done
}

# The framework's suites (op suite, scheduler, codegen, errors) with each device of $DEVICES as the default device
# (HCQ_DEVICE), one gtest process per device under a timeout; recorded beside the conformance suites as suite
# "Framework-<device>", so summary.md counts and lists them the same way.
hw_framework() {
  local d param name rc status
  mkdir -p "$HW_OUT/conformance"
  for d in $DEVICES; do
    param=$(hw_param "$d")
    name="Framework-$param"
    hw_log "framework suites on $d (HCQ_DEVICE=$d, timeout ${HW_FRAMEWORK_TIMEOUT_S}s)"
    HCQ_DEVICE=$d timeout --kill-after=5 "$HW_FRAMEWORK_TIMEOUT_S" "$HW_TESTS" --gtest_filter="$HW_FRAMEWORK_FILTER" \
      --gtest_output="json:$HW_OUT/conformance/$name.json" >"$HW_OUT/conformance/$name.log" 2>&1
    rc=$?
    status="ran"
    (( rc == 124 || rc == 137 )) && status="timed out after ${HW_FRAMEWORK_TIMEOUT_S}s"
    echo "{\"suite\": \"$name\", \"status\": \"$status\", \"exit\": $rc, \"filter\": \"HCQ_DEVICE=$d $HW_FRAMEWORK_FILTER\"}" \
      >"$HW_OUT/conformance/$name.status.json"
  done
}

hw_tools() {
  local d param
  hw_log "hcq info --json"
  timeout 60 "$HW_HCQ" info --json >"$HW_OUT/info.json" 2>"$HW_OUT/info.stderr"
  echo "$?" >"$HW_OUT/info.exit"
  for d in $DEVICES; do
    param=$(hw_param "$d")
    hw_log "hcq bench --device $d --json (timeout ${HW_BENCH_TIMEOUT_S}s)"
    timeout --kill-after=5 "$HW_BENCH_TIMEOUT_S" "$HW_HCQ" bench --device "$d" --json \
      >"$HW_OUT/bench-$param.json" 2>"$HW_OUT/bench-$param.stderr"
    echo "$?" >"$HW_OUT/bench-$param.exit"
  done
}

hw_main_after_probe() {
  hw_machine
  if [[ -n $HW_BUNDLE ]]; then hw_use_bundle; else hw_build; fi
  hw_conformance
  hw_framework
  hw_tools
  hw_log "summary"
  python3 "$HW_REPO/hw-tests/lib/summarize.py" "$VENDOR" "$HW_OUT" "$(( $(date +%s) - HW_T0 ))" >"$HW_OUT/summary.md" ||
    hw_fail "summarize.py failed"
  cat "$HW_OUT/summary.md"
  # Exit status: 0 only when every test ran and passed and every bench finished.
  python3 "$HW_REPO/hw-tests/lib/summarize.py" --status "$VENDOR" "$HW_OUT"
}
