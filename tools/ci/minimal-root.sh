# Sourced by tools/ci/rehearse-bundle.sh and tools/ci/rehearse-packages.sh (run as root): a minimal Debian
# root with none of this machine's packages, in which a deployment is rehearsed.
#
#   minimal_root ROOT LOG   debootstrap --variant=minbase bookworm into ROOT, from the mirror this
#                           machine's apt uses, kept as a tarball in $INFER_REHEARSAL_CACHE (default
#                           /var/cache/infer-rehearsal) so that the next run unpacks it in seconds;
#                           without the cache (or when it cannot be written) it is made afresh.
#   mount_root ROOT         /proc (and /dev when the root has no device files) mounted in it, each
#                           added to the caller's `mounted` array, which its cleanup unmounts.
#   in_root ROOT CMD...     CMD in the root with a clean environment.
#   say ...                 a line on stderr, prefixed with $rehearsal (the caller's name).
#   rehearsal_start NAME    the caller's state: work, a fresh /var/tmp/infer-NAME.XXXXXX removed on
#                           exit (after unmounting what mount_root mounted), root=$work/root, the
#                           verdict GREEN with no reasons, no timings.
#   timed LABEL EXPR        one timing line, "LABEL: $((EXPR)) s".
#   red REASON              the verdict RED, for REASON.

say() { echo "${rehearsal:-rehearsal}: $*" >&2; }

rehearsal_start() {
  timings=()
  verdict=GREEN
  reasons=()
  mounted=()
  work="$(mktemp -d "/var/tmp/infer-$1.XXXXXX")"
  root="$work/root"
  trap rehearsal_cleanup EXIT
}

rehearsal_cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}

timed() { timings+=("$1: $(($2)) s"); }
red() { verdict=RED; reasons+=("$1"); }

minimal_root() {
  local root="$1" log="$2"
  local cache_dir="${INFER_REHEARSAL_CACHE:-/var/cache/infer-rehearsal}"
  local cache="$cache_dir/minbase-bookworm.tar" mirror
  mirror="$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -m1 -v security || true)"
  [[ -n "$mirror" ]] || mirror="$(sed -n 's/^deb \(\[[^]]*\] \)\?\(http[^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | grep -m1 -v security || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  mkdir -p "$root"
  if [[ -f "$cache" ]]; then
    say "minimal root from the cache $cache"
    tar -xf "$cache" -C "$root"
    return
  fi
  say "debootstrap --variant=minbase bookworm from $mirror (a few minutes; cached afterwards in $cache)"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$log" 2>&1 ||
    { tail -n 30 "$log" >&2; say "debootstrap failed"; return 1; }
  if mkdir -p "$cache_dir" 2>/dev/null && tar -cf "$cache.tmp" -C "$root" . 2>/dev/null; then
    mv "$cache.tmp" "$cache"
  else
    rm -f "$cache.tmp"
    say "note: could not write the cache $cache; the next run debootstraps again"
  fi
}

mount_root() {
  local root="$1"
  mount -t proc proc "$root/proc" && mounted+=("$root/proc")
  if [[ ! -c "$root/dev/null" ]]; then mount --bind /dev "$root/dev" && mounted+=("$root/dev"); fi
}

in_root() {
  local root="$1"
  shift
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 "$@"
}
