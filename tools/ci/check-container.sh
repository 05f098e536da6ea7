#!/usr/bin/env bash
# Checks the CPU image (deploy/container/Containerfile, built by tools/deploy/build-images.sh) by
# running it with podman, as root, as CI does:
#
#   tools/ci/check-container.sh [IMAGE]      (default localhost/infer:<version>-cpu)
#
# Every container runs as a pod's securityContext would have it: --read-only (podman gives /tmp,
# /var/tmp and /run a tmpfs), --cap-drop=ALL, --security-opt no-new-privileges, as the image's user.
# One line per check, PASS, SKIP or FAIL with its time, then "N passed, N failed, N skipped"; exit 0
# only when no check failed:
#   config     the image's User is numeric and not 0, its Entrypoint is infer
#   non-root   `id -u` in the container is not 0, and the root filesystem refuses a write
#   labels     the OCI labels are there (title, version, revision, created, source), the version is
#              infer --version's, and infer.versions-toml.sha256 is the sha256 of the VERSIONS.toml
#              in the image
#   classify   a bundled sample (/usr/share/infer/samples/ankle-boot.png) classified, --json: its top
#              class is "Ankle boot", on the CPU
#   check      infer --check --json exits 5 and says why: no NVIDIA driver, the first failure of every
#              backend its driver.release
#   serve      infer serve with its ports published on 127.0.0.1 only: ready, then one HTTP and one
#              gRPC inference of the sample through NVIDIA's tritonclient (tools/dev/serve-venv.sh),
#              each answering "Ankle boot" first
#   stop       podman stop -t 30 (SIGTERM): the server drains and exits 0, and logs how many of the
#              requests it received it answered (2 of 2)
#   node-check the Kubernetes node check's pod command (the DaemonSet's node-check.sh, which runs
#              infer --check --nfd into a bind-mounted features.d) as the DaemonSet runs it: a valid
#              feature file, no ready marker (no driver), exit 0 on SIGTERM (check_node_check below)
# Bounded: each podman command by `timeout`, the whole script by $INFER_CHECK_CONTAINER_TIMEOUT
# (default 600 s).
set -euo pipefail
if [[ -z "${INFER_CHECK_CONTAINER_BOUNDED:-}" ]]; then
  INFER_CHECK_CONTAINER_BOUNDED=1 exec timeout --kill-after=10 "${INFER_CHECK_CONTAINER_TIMEOUT:-600}" bash "${BASH_SOURCE[0]}" "$@"
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version="$(sed -n 's/^project(infer VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
image="${1:-localhost/infer:$version-cpu}"
[[ $(id -u) -eq 0 ]] || { echo "check-container: run as root (podman's storage under /var/lib/containers)" >&2; exit 2; }
podman image exists "$image" || { echo "check-container: no image $image (tools/deploy/build-images.sh)" >&2; exit 2; }

sample=/usr/share/infer/samples/ankle-boot.png
hardened=(--read-only --cap-drop=ALL --security-opt no-new-privileges)
run() { timeout 120 podman run --rm "${hardened[@]}" "$@"; }   # run [PODMAN_RUN_ARGS...] IMAGE [ARGS...]
work="$(mktemp -d /var/tmp/infer-check-container.XXXXXX)"
server="infer-check-container-$$"
cleanup() {
  timeout 60 podman rm --force --ignore --time 0 "$server" "$server-node" >/dev/null 2>&1 || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

failed=()
# check NAME FUNCTION: one line, PASS, SKIP (FUNCTION exits 77) or FAIL, with the time and the last
# line FUNCTION printed (on FAIL its output before that too). FUNCTION runs in a background subshell,
# where `set -e` holds (it would not in an `if` or `||`).
check() {
  local name="$1" start=$SECONDS rc=0 verdict=PASS
  "$2" >"$work/$name.log" 2>&1 &
  wait $! || rc=$?
  if ((rc == 77)); then
    verdict=SKIP
  elif ((rc != 0)); then
    verdict=FAIL
    failed+=("$name")
    head -n -1 "$work/$name.log" | tail -n 20 | sed 's/^/    /' >&2
  fi
  echo "$verdict $name" >>"$work/verdicts"
  printf 'check-container: %s %-10s %3d s  %s\n' "$verdict" "$name" $((SECONDS - start)) "$(tail -n 1 "$work/$name.log")"
}
fail() { echo "$*"; exit 1; }

check_config() {
  local user entrypoint
  user="$(podman image inspect --format '{{.Config.User}}' "$image")"
  entrypoint="$(podman image inspect --format '{{json .Config.Entrypoint}}' "$image")"
  [[ "$user" =~ ^[0-9]+(:[0-9]+)?$ ]] || fail "User is '$user': not numeric (Kubernetes' runAsNonRoot needs a number)"
  [[ "${user%%:*}" -ne 0 ]] || fail "User is root ($user)"
  [[ "$entrypoint" == '["infer"]' ]] || fail "Entrypoint is $entrypoint, not [\"infer\"]"
  echo "User $user, Entrypoint $entrypoint"
}

check_non_root() {
  local uid
  uid="$(run --entrypoint id "$image" -u)" || fail "id -u failed in the container"
  [[ "$uid" =~ ^[0-9]+$ && "$uid" -ne 0 ]] || fail "id -u in the container is '$uid'"
  if run --entrypoint touch "$image" /usr/share/infer/written 2>/dev/null; then
    fail "the root filesystem took a write under --read-only"
  fi
  echo "uid $uid; the root filesystem is read-only"
}

check_labels() {
  local labels inside printed
  labels="$(podman image inspect --format '{{json .Config.Labels}}' "$image")"
  inside="$(run --entrypoint sha256sum "$image" /usr/share/infer/VERSIONS.toml | cut -d' ' -f1)" ||
    fail "sha256sum of the image's VERSIONS.toml failed"
  printed="$(run "$image" --version)" || fail "infer --version failed"
  printed="${printed%%$'\n'*}"
  python3 - "$labels" "$inside" "$printed" <<'EOF'
import json, sys
labels, inside, printed = json.loads(sys.argv[1]) or {}, sys.argv[2], sys.argv[3]
oci = "org.opencontainers.image."
missing = [k for k in ("title", "version", "revision", "created") if not labels.get(oci + k)]
missing += [oci + "source"] if oci + "source" not in labels else []
if missing:
    sys.exit(f"labels missing or empty: {', '.join(missing)}")
if printed != f"infer {labels[oci + 'version']}":
    sys.exit(f"label version {labels[oci + 'version']!r}, infer --version prints {printed!r}")
digest = labels.get("infer.versions-toml.sha256", "")
if digest != inside:
    sys.exit(f"infer.versions-toml.sha256 is {digest!r}, the image's VERSIONS.toml is {inside}")
print(f"version {labels[oci + 'version']}, revision {labels[oci + 'revision'][:12]}, VERSIONS.toml sha256 {digest[:16]}...")
EOF
}

check_classify() {
  local out
  out="$(run "$image" --json "$sample")" || fail "infer --json $sample exited $?"
  python3 - "$out" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
top = r["top"][0]
if top["label"] != "Ankle boot" or r["device"] != "cpu":
    sys.exit(f"top class {top} on {r['device']}, want Ankle boot on cpu")
print(f"{r['file']}: {top['label']} {top['prob']:.3f} [{r['device']}]")
EOF
}

check_check() {
  local rc=0
  run "$image" --check --json >"$work/check.json" 2>"$work/check.err" || rc=$?
  [[ $rc -eq 5 ]] || { cat "$work/check.err"; fail "infer --check --json exited $rc, want 5 (no driver here)"; }
  python3 - "$work/check.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r["ok"] is not False or r["backend"] is not None:
    sys.exit(f"ok={r['ok']}, backend={r['backend']}: want a mismatch and no backend")
for b in r["backends"]:
    if b["runs"] or not b["first_failure"].startswith(f"{b['name']}.driver.release: not installed"):
        sys.exit(f"backend {b['name']}: runs={b['runs']}, first failure {b['first_failure']!r}: want the driver")
print(f"exit 5; first failures: {'; '.join(b['first_failure'].split(' (')[0] for b in r['backends'])}")
EOF
}

check_serve() {
  local py http grpc
  py="$("$root/tools/dev/serve-venv.sh")" || fail "tools/dev/serve-venv.sh failed"
  timeout 60 podman run -d --name "$server" "${hardened[@]}" -p 127.0.0.1::8000 -p 127.0.0.1::8001 \
    "$image" serve --host 0.0.0.0 >/dev/null || fail "podman run infer serve failed"
  http="$(timeout 30 podman port "$server" 8000/tcp)" || fail "podman port: 8000 not published"
  grpc="$(timeout 30 podman port "$server" 8001/tcp)" || fail "podman port: 8001 not published"
  [[ "$http" == 127.0.0.1:* && "$grpc" == 127.0.0.1:* ]] || fail "ports published on $http and $grpc, not 127.0.0.1 only"
  timeout 20 podman cp "$server:$sample" "$work/sample.png" 2>/dev/null || cp "$root/samples/ankle-boot.png" "$work/sample.png"
  timeout 90 "$py" - "$http" "$grpc" "$work/sample.png" <<'EOF'
import sys, time
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
http_url, grpc_url, sample = sys.argv[1:4]
model = "fashion-mnist-cnn"
image = np.array([[open(sample, "rb").read()]], dtype=object)
deadline = time.monotonic() + 60
h = httpclient.InferenceServerClient(http_url)
while True:   # the server loads its model before it answers ready
    try:
        if h.is_server_ready():
            break
    except Exception:
        pass
    if time.monotonic() > deadline:
        sys.exit("not ready within 60 s")
    time.sleep(0.2)
answers = []
i = httpclient.InferInput("image", [1, 1], "BYTES")
i.set_data_from_numpy(image)
answers.append(("HTTP", h.infer(model, [i], outputs=[httpclient.InferRequestedOutput("scores", class_count=3)]).as_numpy("scores")))
g = grpcclient.InferenceServerClient(grpc_url)
i = grpcclient.InferInput("image", [1, 1], "BYTES")
i.set_data_from_numpy(image)
answers.append(("gRPC", g.infer(model, [i], outputs=[grpcclient.InferRequestedOutput("scores", class_count=3)]).as_numpy("scores")))
for proto, scores in answers:
    best = scores[0][0].decode()
    if best.split(":", 2)[2] != "Ankle boot":
        sys.exit(f"{proto}: best class {best}, want Ankle boot")
print("; ".join(f"{p} {s[0][0].decode()}" for p, s in answers) + f" (HTTP {http_url}, gRPC {grpc_url})")
EOF
}

check_stop() {
  local code log
  timeout 60 podman container exists "$server" || fail "no server container (the serve check failed)"
  timeout 60 podman stop -t 30 "$server" >/dev/null || fail "podman stop failed"
  code="$(timeout 30 podman inspect --format '{{.State.ExitCode}}' "$server")"
  log="$(timeout 30 podman logs "$server" 2>&1)"
  [[ "$code" == 0 ]] || { echo "$log" | tail -n 5; fail "infer serve exited $code after SIGTERM, want 0"; }
  grep -q 'of 2 inference requests received were answered' <<<"$log" ||
    { echo "$log" | tail -n 5; fail "no 'answered' line for the 2 requests in the server's log"; }
  echo "exit 0: $(grep -o 'stopped: .*answered' <<<"$log" | tail -n 1)"
}

# --- the Kubernetes node check's pod command (the DaemonSet of deploy/kubernetes/base/node-check) ----
# Its container as the DaemonSet runs it, read from the rendered manifest (kubectl kustomize
# deploy/kubernetes/overlays/cpu): its command, environment and user (runAsUser 0: it writes into
# host folders), node-check.sh mounted read-only where its ConfigMap goes, read-only root
# filesystem, no capabilities, no privilege escalation, and NFD's features.d and the ready markers'
# folder bind-mounted where its hostPaths go. After its first check it is stopped with SIGTERM: it
# must exit 0, have written a feature file that tests/deploy/nfd_feature_file.py accepts
# (manifest-holds=false: no driver here), left no dot-file behind, and hold no ready marker.
check_node_check() {
  local script="$root/deploy/kubernetes/base/node-check/node-check.sh" code log spec
  mkdir -p "$work/features.d" "$work/validations"
  # One podman argument per line: --user, -e NAME=value, -v for each hostPath and the ConfigMap,
  # --entrypoint, then the image and the command's other words.
  # kubectl: the machine's, else the one tools/ci/check-kubernetes.sh put in its venv (CI's first stage).
  local kubectl="${KUBECTL:-$(command -v kubectl || echo "${INFER_CACHE:-$HOME/.cache/infer}/k8s-venv/bin/kubectl")}"
  spec="$("$kubectl" kustomize "$root/deploy/kubernetes/overlays/cpu" | python3 -c '
import sys, yaml
work, script_dir, image = sys.argv[1:4]
ds = next(d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = pod["containers"][0]
user = c.get("securityContext", {}).get("runAsUser", pod.get("securityContext", {}).get("runAsUser"))
print("--user"); print("%s:0" % user)
for e in c.get("env", []):
    print("-e"); print("%s=%s" % (e["name"], e["value"]))
volumes = {v["name"]: v for v in pod["volumes"]}
for m in c["volumeMounts"]:
    v = volumes[m["name"]]
    if "hostPath" in v:
        local = work + "/" + v["hostPath"]["path"].rstrip("/").split("/")[-1]
        print("-v"); print("%s:%s" % (local, m["mountPath"]))
    elif "configMap" in v:
        print("-v"); print("%s:%s:ro" % (script_dir, m["mountPath"]))
command = c["command"] + c.get("args", [])
print("--entrypoint"); print(command[0]); print(image)
for word in command[1:]: print(word)
' "$work" "$(dirname "$script")" "$image")" || fail "cannot read the DaemonSet from deploy/kubernetes/overlays/cpu"
  local -a args
  mapfile -t args <<<"$spec"
  echo "podman run ${args[*]}"
  timeout 60 podman run -d --name "$server-node" "${hardened[@]}" "${args[@]}" >/dev/null ||
    fail "podman run of the DaemonSet's command failed"
  for _ in $(seq 150); do   # its first check: a second or two
    [[ -f "$work/features.d/infer" ]] && break
    sleep 0.2
  done
  timeout 60 podman stop -t 10 "$server-node" >/dev/null || fail "podman stop failed"
  code="$(timeout 30 podman inspect --format '{{.State.ExitCode}}' "$server-node")"
  log="$(timeout 30 podman logs "$server-node" 2>&1)"
  timeout 60 podman rm -f "$server-node" >/dev/null
  echo "$log" | tail -n 4
  [[ "$code" == 0 ]] || fail "node-check.sh exited $code on SIGTERM, want 0"
  [[ -z "$(ls -A "$work/validations")" ]] || fail "a ready marker is left while the manifest does not hold: $(ls -A "$work/validations")"
  [[ "$(ls -A "$work/features.d")" == infer ]] || fail "features.d holds '$(ls -A "$work/features.d" | tr '\n' ' ')', want the file infer alone"
  python3 "$root/tests/deploy/nfd_feature_file.py" "$work/features.d/infer" --holds false --expiry 1200 >"$work/nfd.txt" ||
    { cat "$work/nfd.txt"; fail "the feature file is not what NFD and docs/kubernetes.md want"; }
  cat "$work/features.d/infer"
  echo "exit 0 on SIGTERM; features.d/infer: $(grep -c = "$work/nfd.txt") labels, $(stat -c %s "$work/features.d/infer") bytes, no ready marker"
}

check config check_config
check non-root check_non_root
check labels check_labels
check classify check_classify
check check check_check
check serve check_serve
check stop check_stop
check node-check check_node_check

passed=$(grep -c '^PASS' "$work/verdicts" || true) skipped=$(grep -c '^SKIP' "$work/verdicts" || true)
if ((${#failed[@]})); then
  echo "check-container: RED on $image in $SECONDS s: ${failed[*]} failed" >&2
else
  echo "check-container: GREEN on $image in $SECONDS s" >&2
fi
echo "check-container: $passed passed, ${#failed[@]} failed, $skipped skipped"
((${#failed[@]} == 0))
