#!/usr/bin/env bash
# hw-tests on a real AMD GPU: probe, build, conformance suite on every AMD:n, `hcq info`, `hcq bench`, summary.md.
# See docs/hw-tests.md.
#   hw-tests/amd/run.sh [--build-dir DIR] [--out DIR]
VENDOR=amd
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
hw_parse_args "$@"

# A rehearsal of the whole run on other devices (simulated ones), for checking this script where there is no GPU.
if [[ -n ${HCQ_HW_REHEARSE_DEVICES:-} ]]; then
  hw_note "REHEARSAL on $HCQ_HW_REHEARSE_DEVICES (HCQ_HW_REHEARSE_DEVICES): not a hardware run"
  DEVICES=${HCQ_HW_REHEARSE_DEVICES//,/ }
  hw_main_after_probe
  exit $?
fi

[[ -e /dev/kfd ]] || hw_skip "no /dev/kfd (no AMD GPU, or amdgpu is not loaded)"
[[ -r /dev/kfd && -w /dev/kfd ]] || hw_note "warning: no read/write permission on /dev/kfd (group render/video?)"
topology=/sys/devices/virtual/kfd/kfd/topology
[[ -r $topology/generation_id ]] && hw_note "kfd topology generation: $(cat "$topology/generation_id")"
[[ -r /sys/module/amdgpu/version ]] && hw_note "amdgpu module: $(cat /sys/module/amdgpu/version)" ||
  hw_note "amdgpu module: in-tree (kernel $(uname -r))"

# GPU nodes are those with a non-zero gpu_id (the CPU node has 0); AMD:n counts them in node order, as hcq does.
DEVICES=""
n=0
for i in $(ls "$topology/nodes" 2>/dev/null | sort -n); do
  node=$topology/nodes/$i
  gpu_id=$(cat "$node/gpu_id" 2>/dev/null)
  [[ -n $gpu_id && $gpu_id != 0 ]] || continue
  gfx=$(awk '$1 == "gfx_target_version" {print $2}' "$node/properties" 2>/dev/null)
  hw_note "gpu node $i: gpu_id $gpu_id, gfx_target_version $gfx, $(cat "$node/name" 2>/dev/null)"
  DEVICES+="${DEVICES:+ }AMD:$n"
  n=$((n + 1))
done
[[ -n $DEVICES ]] || hw_skip "/dev/kfd exists but the KFD topology has no GPU node"
command -v rocm-smi >/dev/null 2>&1 && hw_note "rocm-smi: $(timeout 20 rocm-smi --showproductname 2>&1 | grep -E 'Card (series|model)' | paste -sd'|')"
hw_note "devices: $DEVICES"

hw_main_after_probe
