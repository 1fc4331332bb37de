#!/usr/bin/env bash
# hw-tests on a real NVIDIA GPU: probe, build, conformance suite on every NV:n (and, when libcuda.so.1 is there, on
# every CUDA:n, the CUDA adapter on the same GPUs, in the same run), `hcq info`, `hcq bench` (with CUDA's launch latency
# beside hcq's when libcuda.so.1 is there), summary.md. See docs/hw-tests.md and docs/cuda.md.
#   hw-tests/nv/run.sh [--build-dir DIR | --bundle DIR] [--out DIR]   (--bundle: from hw-tests/bundle.sh, no build)
VENDOR=nv
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

# What is there, said either way, before anything is built.
[[ -e /dev/nvidiactl ]] || hw_skip "no /dev/nvidiactl (no NVIDIA GPU, or the nvidia module is not loaded)"
if [[ -r /proc/driver/nvidia/version ]]; then
  hw_note "driver: $(head -1 /proc/driver/nvidia/version)"
  # hcq needs the open kernel module's RM ABI; the proprietary one is recorded as such (hcq info says more).
  grep -q "Open Kernel Module" /proc/driver/nvidia/version && hw_note "module: open" || hw_note "module: proprietary"
else
  hw_note "driver: /proc/driver/nvidia/version is not readable"
fi
for info in /proc/driver/nvidia/gpus/*/information; do
  [[ -r $info ]] || continue
  hw_note "gpu $(basename "$(dirname "$info")"): $(grep -E '^(Model|Device Minor)' "$info" | tr -s ' \t' ' ' | paste -sd';')"
done
if command -v nvidia-smi >/dev/null 2>&1; then
  hw_note "nvidia-smi: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,pci.bus_id,memory.total \
    --format=csv,noheader 2>&1 | paste -sd'|')"
else
  hw_note "nvidia-smi: not installed"
fi
[[ -e /dev/nvidia-uvm ]] && hw_note "uvm: /dev/nvidia-uvm present" ||
  hw_note "uvm: /dev/nvidia-uvm absent (nvidia-uvm not loaded: NV:n will not open)"
HAVE_LIBCUDA=0
ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && HAVE_LIBCUDA=1
[[ $HAVE_LIBCUDA == 1 ]] && hw_note "libcuda: present (CUDA:n run beside NV:n; bench compares with CUDA)" ||
  hw_note "libcuda: absent (no CUDA:n devices; bench reports no CUDA comparison)"

# NV:n for each /dev/nvidia<minor> (hcq numbers GPUs by minor number).
DEVICES=""
n=0
for node in /dev/nvidia[0-9]*; do
  [[ -e $node ]] || continue
  DEVICES+="${DEVICES:+ }NV:$n"
  n=$((n + 1))
done
[[ -n $DEVICES ]] || hw_skip "/dev/nvidiactl exists but there is no /dev/nvidia<N>: no GPU is exposed"
# The CUDA adapter on the same GPUs: CUDA:n beside NV:n. CUDA numbers devices fastest first unless told PCI order;
# with PCI order its n is the GPU of the n-th minor number on an ordinary machine (the UUIDs in `hcq info` tell).
if [[ $HAVE_LIBCUDA == 1 ]]; then
  export CUDA_DEVICE_ORDER=PCI_BUS_ID
  for ((i = 0; i < n; i++)); do DEVICES+=" CUDA:$i"; done
fi
hw_note "devices: $DEVICES"

hw_main_after_probe
