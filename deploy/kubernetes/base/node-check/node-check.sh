#!/bin/sh
# The node check's loop, as the DaemonSet infer-node-check runs it (POSIX sh; the image's /bin/sh,
# date, sleep and rm). Every INFER_CHECK_PERIOD_S seconds it runs
#
#   infer --check --nfd $INFER_NFD_FILE --nfd-expiry $INFER_NFD_EXPIRY_S
#
# which writes Node Feature Discovery's local feature file atomically (a dot-file beside it, then a
# rename: NFD ignores dot-files), and keeps a ready marker in the GPU Operator's style: the file
# $INFER_READY_FILE exists while the check holds (exit 0) and is removed when it does not (any other
# exit), so that other pods can wait on it:
#
#   until [ -f /run/infer/validations/infer-ready ]; do sleep 5; done
#
# The feature file is left in place on exit: its # +expiry-time (a few periods ahead) retires the
# labels of a node whose check stopped. SIGTERM removes the marker and exits at once, also from the
# sleep between two checks. After every check the time is written to $INFER_HEARTBEAT_FILE, which the
# pod's probes read. The full report is logged when the exit code changes, the result line otherwise.
set -u

period="${INFER_CHECK_PERIOD_S:-300}"
expiry="${INFER_NFD_EXPIRY_S:-1200}"
features="${INFER_NFD_FILE:-/etc/kubernetes/node-feature-discovery/features.d/infer}"
marker="${INFER_READY_FILE:-/run/infer/validations/infer-ready}"
heartbeat="${INFER_HEARTBEAT_FILE:-/tmp/node-check.heartbeat}"
infer="${INFER_EXE:-infer}"

sleeper=""
stop() {
  rm -f "$marker"
  [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null
  echo "node-check: stopped; $marker removed"
  exit 0
}
trap stop TERM INT

last=""
while :; do
  report=$("$infer" --check --nfd "$features" --nfd-expiry "$expiry" 2>&1)
  rc=$?
  case "$rc" in
    0) : >"$marker" || echo "node-check: cannot create $marker" ;;
    *) rm -f "$marker" ;;
  esac
  case "$rc" in
    0) what="manifest holds" ;;
    5) what="manifest does not hold" ;;
    3) what="the feature file $features cannot be written" ;;
    *) what="the check failed (exit $rc)" ;;
  esac
  if [ "$rc" != "$last" ]; then
    printf '%s\n' "$report"
  else
    printf '%s\n' "$report" | while IFS= read -r line; do
      case "$line" in result:*) printf '%s\n' "$line" ;; esac
    done
  fi
  echo "node-check: $(date -u +%Y-%m-%dT%H:%M:%SZ): exit $rc: $what; next check in ${period}s"
  last="$rc"
  date +%s >"$heartbeat" || echo "node-check: cannot write $heartbeat"
  sleep "$period" &
  sleeper=$!
  wait "$sleeper"
  sleeper=""
done
