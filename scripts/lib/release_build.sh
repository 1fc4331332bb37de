# Sourced by scripts/bench.sh and scripts/train.sh: release_build TARGET... configures build/ (or reconfigures it)
# with the options of scripts/test.sh's release step, so switching between the scripts never rebuilds everything,
# and builds the targets. The log is .cache/logs/build.log (git-ignored); on failure its end is printed.
release_build() {
  local log=.cache/logs/build.log
  mkdir -p .cache/logs
  if [[ -f build/build.ninja ]]; then
    meson setup --reconfigure build -Dbuildtype=release -Dwerror=true >"$log" 2>&1 || { cat "$log"; return 1; }
  else
    meson setup build -Dbuildtype=release -Dwerror=true >"$log" 2>&1 || { cat "$log"; return 1; }
  fi
  ninja -C build -j "${HCQ_JOBS:-2}" "$@" >>"$log" 2>&1 || { grep -v '^\[' "$log" | tail -60; return 1; }
}
