# shellcheck shell=bash
# The dynamic loader's cache (`ldconfig -p`), for gpu-bundle.sh and gpu-check.sh (carried beside it
# in the bundle's tools/). Sourced; defines ld_cache and the two lookups below.
#
# The cache is read once and whole into a variable, and searched in bash. Piping it into a reader
# that stops early (`grep -q`, awk's `exit`) is wrong under pipefail: once the cache outgrows a
# pipe's buffer (64 KiB: this CI machine's is 77 KiB), ldconfig dies of SIGPIPE, the pipeline
# reports 141, and the lookup fails or the script exits (CI's bundle rehearsal did).
#
# A line of `ldconfig -p` reads "<TAB>libcudart.so.13 (libc6,x86-64) => /usr/lib/.../libcudart.so.13".
ld_cache="$(timeout 20 "$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null || true)"

# in_ld_cache SONAME: the loader's cache lists SONAME (any ABI).
in_ld_cache() { [[ $'\n'"$ld_cache" == *$'\n\t'"$1 ("* ]]; }

# ld_cache_path SONAME: prints the path of SONAME's first x86-64 entry, as the loader would pick it;
# fails when there is none.
ld_cache_path() {
  local line
  while IFS= read -r line; do
    if [[ "$line" == $'\t'"$1 ("*x86-64*") => "* ]]; then
      printf '%s\n' "${line##* => }"
      return 0
    fi
  done <<<"$ld_cache"
  return 1
}
