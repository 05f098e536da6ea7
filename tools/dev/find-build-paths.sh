#!/usr/bin/env bash
# Lists the files under DIR whose bytes (`strings -a`) hold any of the PATHs, one line each:
# "<file relative to DIR> holds <path>". Exit 0 when none does, 1 when some do.
#   tools/dev/find-build-paths.sh DIR PATH...
# Used by tools/ci/check-install.sh (an install tree) and tools/ci/rehearse-packages.sh (the packages'
# contents): no installed or packaged file may point back at the machine that built it.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: tools/dev/find-build-paths.sh DIR PATH..." >&2; exit 2; }
dir="$1"
shift
found=0
while IFS= read -r -d '' file; do
  for path in "$@"; do
    # Not `strings | grep -q`: grep -q stops at the first match, strings dies of SIGPIPE, and under
    # pipefail the pipeline then reads as "no match".
    if grep -qF -- "$path" < <(strings -a "$file"); then
      echo "${file#"$dir"/} holds $path"
      found=1
    fi
  done
done < <(find "$dir" -type f -print0)
exit "$found"
