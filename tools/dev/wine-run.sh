#!/usr/bin/env bash
# Runs a Windows program under wine, quietly and without a display: CMake's emulator for the
# Windows build (cmake/mingw-w64.cmake), so ctest runs the .exe tests here.
#
#   tools/dev/wine-run.sh PROGRAM.exe [ARGS...]
#   tools/dev/wine-run.sh --server-start | --server-stop
#                         keep wine's server process up between runs (a run then starts in about
#                         0.1 s instead of 1.5 s), and end it; tools/dev/windows.sh does both around ctest
#
# Debian's wine64 puts no command on PATH: the loader is /usr/lib/wine/wine64. The prefix (wine's
# C: drive and registry) is made on first use in $INFER_WINE_PREFIX, default
# ${XDG_CACHE_HOME:-~/.cache}/infer/wine-prefix, outside the repository. WINEDEBUG=-all silences
# wine's own diagnostics; WINEDLLOVERRIDES skips the Mono and Gecko installers. PATH for the
# program comes from WINEPATH, as wine documents; the exit status is the program's.
set -euo pipefail
loader=/usr/lib/wine/wine64
[[ -x "$loader" ]] || { echo "wine-run: $loader not found (tools/dev/install-deps.sh --windows)" >&2; exit 127; }
export WINEPREFIX="${INFER_WINE_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/infer/wine-prefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
if [[ ! -f "$WINEPREFIX/system.reg" ]]; then
  mkdir -p "$WINEPREFIX"
  # The first start makes the prefix and says so on stderr; keep that out of the program's output.
  "$loader" cmd /c exit >/dev/null 2>&1 || true
fi
case "${1:-}" in
  --server-start)
    # A server already up for this prefix (another run, a wine program open) makes -p fail; it is
    # as good, and without one, wine starts its own at the next run.
    /usr/lib/wine/wineserver -p 2>/dev/null || true
    # Start wine's services (winedevice.exe) now, with no pipe of ours: started by a test, they would
    # hold ctest's output pipe open for as long as the server lives, and ctest would wait forever.
    "$loader" cmd /c exit </dev/null >/dev/null 2>&1 || true
    exit 0 ;;
  --server-stop) exec /usr/lib/wine/wineserver -k ;;
esac
exec "$loader" "$@"
