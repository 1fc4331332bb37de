#!/usr/bin/env bash
# Clang's thread-safety analysis over the core (hcq/): every member a mutex guards (HCQ_GUARDED_BY, see
# include/hcq/backend/thread_annotations.hpp) is touched only with that mutex held. The builds use g++, which ignores
# the annotations, so this runs clang on the sources alone (-fsyntax-only: a few seconds, no objects).
# Exit status: 0 clean, 1 a finding (printed), 2 no clang-19.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
clang=${HCQ_TSA_CLANG:-clang++-19}
if ! command -v "$clang" >/dev/null 2>&1; then
  echo "check_thread_safety: $clang not found (scripts/setup.sh installs clang-19)" >&2
  exit 2
fi
status=0
count=0
for source in hcq/*.cpp; do
  count=$((count + 1))
  "$clang" -std=c++20 -fsyntax-only -Wthread-safety -Werror -Iinclude -Ihcq "$source" || status=1
done
if [[ $status -eq 0 ]]; then echo "ok ($count files)"; fi
exit $status
