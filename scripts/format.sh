#!/usr/bin/env bash
# Formats the C and C++ sources with clang-format 19 and .clang-format (files in .clang-format-ignore excepted).
#
# usage: scripts/format.sh            rewrite every file that differs
#        scripts/format.sh --check    change nothing; list the files that differ and exit 1 if there are any
# The files: those git tracks, and new ones it does not ignore, named *.cpp, *.hpp, *.h, *.c or *.cpp.in.
# environment: HCQ_CLANG_FORMAT (default clang-format-19) the binary; it must be clang-format 19, because another
# version formats some constructs differently and the check would fail on code formatted correctly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h | --help)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "format.sh: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

clang_format=${HCQ_CLANG_FORMAT:-clang-format-19}
if ! version=$("$clang_format" --version 2>/dev/null); then
  echo "format.sh: $clang_format not found (scripts/setup.sh installs clang-format-19)" >&2
  exit 2
fi
if [[ ! $version =~ version\ 19\. ]]; then
  echo "format.sh: $clang_format is not clang-format 19 ($version)" >&2
  exit 2
fi

files=()
while IFS= read -r -d '' f; do
  [[ -f $f ]] && files+=("$f")  # a tracked file deleted in the work tree is still listed
done < <(git ls-files -z --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.c' '*.cpp.in' | sort -zu)

if [[ ${#files[@]} -eq 0 ]]; then
  echo "format.sh: no C or C++ files found" >&2  # clang-format without files would read stdin
  exit 2
fi

if [[ $check -eq 0 ]]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi

# One warning per file is enough to name it; the warnings go to stderr, one line "FILE:LINE:COL: error: ..." each.
status=0
out=$("$clang_format" --dry-run -Werror --ferror-limit=1 "${files[@]}" 2>&1) || status=$?
if [[ $status -eq 0 ]]; then
  echo "${#files[@]} C and C++ files match .clang-format (those in .clang-format-ignore excepted)"
  exit 0
fi
differ=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted \[-Wclang-format-violations\]$/\1/p' \
  <<<"$out" | sort -u)
if [[ -z $differ ]]; then
  echo "$out" >&2  # clang-format failed for another reason (an unreadable .clang-format, a missing file)
  exit 2
fi
count=$(wc -l <<<"$differ")
echo "$count of ${#files[@]} C and C++ files differ from .clang-format (scripts/format.sh rewrites them):"
echo "$differ"
exit 1
