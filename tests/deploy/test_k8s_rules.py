#!/usr/bin/env python3
"""tools/ci/k8s_rules.py refuses what each of its rules is there to refuse.

    test_k8s_rules.py CPU_RENDER.yaml GPU_RENDER.yaml [unittest arguments]

The renders are the overlays as `kubectl kustomize` prints them (tools/ci/check-kubernetes.sh makes
them and runs this with its venv's Python, which has PyYAML). Both must pass as they are; then each
case breaks one thing in a copy and checks that exactly the rule meant for it fails, naming the
object, so that no rule passes because it looks at nothing.
"""

import copy
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "ci"))
import k8s_rules  # noqa: E402

RENDERS = {}


def find(docs, kind, name):
    hits = [d for d in docs if d.get("kind") == kind and d["metadata"]["name"].startswith(name)]
    assert len(hits) == 1, f"{kind}/{name}: {len(hits)} in the render"
    return hits[0]


def pod(docs, kind, name):
    return find(docs, kind, name)["spec"]["template"]["spec"]


def container(docs, kind, name):
    return pod(docs, kind, name)["containers"][0]


def set_args(ctr, option, value):
    """Replaces the value after option, or drops both when value is None."""
    args = ctr["args"]
    i = args.index(option)
    if value is None:
        del args[i:i + 2]
    else:
        args[i + 1] = value


def rename_port(docs, old, new):
    """Renames a port of the server's container, and the Service's targetPort with it."""
    [p for p in container(docs, "Deployment", "infer-server")["ports"] if p["name"] == old][0]["name"] = new
    [p for p in find(docs, "Service", "infer-server")["spec"]["ports"] if p["targetPort"] == old][0]["targetPort"] = new


# (rule that must fail, what is broken, the render it is broken in, the change)
CASES = [
    ("names", "a Service named with capitals and '_'", "cpu",
     lambda d: find(d, "Service", "infer-server")["metadata"].update(name="Infer_Server")),
    ("names", "a Job name of 64 characters", "cpu",
     lambda d: find(d, "Job", "infer-batch")["metadata"].update(name="b" * 64)),
    ("names", "a container port name of 16 characters", "cpu",
     lambda d: rename_port(d, "metrics", "metrics-endpoint")),
    ("labels", "a nodeSelector key with a space", "cpu",
     lambda d: pod(d, "DaemonSet", "infer-node-check")["nodeSelector"].update({"bad key": "x"})),
    ("labels", "a label value of 64 characters", "cpu",
     lambda d: find(d, "Service", "infer-server")["metadata"]["labels"].update({"note": "v" * 64})),
    ("labels", "a node affinity value with ':'", "gpu",
     lambda d: pod(d, "DaemonSet", "infer-node-check")["affinity"]["nodeAffinity"][
         "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0].update(values=["a:b"])),
    ("selectors", "a Deployment selector that its template does not carry", "cpu",
     lambda d: find(d, "Deployment", "infer-server")["spec"]["selector"]["matchLabels"].update(
         {"app.kubernetes.io/component": "servers"})),
    ("selectors", "a DaemonSet selector that its template does not carry", "gpu",
     lambda d: find(d, "DaemonSet", "infer-node-check")["spec"]["selector"]["matchLabels"].update(
         {"app.kubernetes.io/instance": "other"})),
    ("selectors", "a Service selecting no pod", "cpu",
     lambda d: find(d, "Service", "infer-server")["spec"]["selector"].update({"app.kubernetes.io/component": "sever"})),
    ("selectors", "a PodDisruptionBudget selecting no pod", "cpu",
     lambda d: find(d, "PodDisruptionBudget", "infer-server")["spec"]["selector"]["matchLabels"].update(
         {"app.kubernetes.io/component": "batch-x"})),
    ("selectors", "a topology spread selector that is not the pod's", "cpu",
     lambda d: pod(d, "Deployment", "infer-server")["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"].update(
         {"app.kubernetes.io/component": "other"})),
    ("references", "an HPA scaling a Deployment that is not there", "cpu",
     lambda d: find(d, "HorizontalPodAutoscaler", "infer-server")["spec"]["scaleTargetRef"].update(name="infer-srv")),
    ("references", "a volumeMount of no volume", "cpu",
     lambda d: container(d, "Job", "infer-batch")["volumeMounts"][0].update(name="dat")),
    ("references", "a ConfigMap volume without its ConfigMap (a generated name lost)", "cpu",
     lambda d: [v for v in pod(d, "DaemonSet", "infer-node-check")["volumes"] if "configMap" in v][0]["configMap"].update(
         name="infer-node-check")),
    ("references", "a PVC volume without its claim", "cpu",
     lambda d: [v for v in pod(d, "Job", "infer-batch")["volumes"] if "persistentVolumeClaim" in v][0][
         "persistentVolumeClaim"].update(claimName="infer-batch")),
    ("probe-ports", "a readiness probe on a port name the container lacks", "cpu",
     lambda d: container(d, "Deployment", "infer-server")["readinessProbe"]["httpGet"].update(port="htttp")),
    ("probe-ports", "a liveness probe on a port number the container lacks", "gpu",
     lambda d: container(d, "Deployment", "infer-server")["livenessProbe"]["httpGet"].update(port=8080)),
    ("probe-ports", "a Service targetPort the pods lack", "cpu",
     lambda d: find(d, "Service", "infer-server")["spec"]["ports"][2].update(targetPort="metric")),
    ("probes", "a server without a liveness probe", "cpu",
     lambda d: container(d, "Deployment", "infer-server").pop("livenessProbe")),
    ("probes", "a node check without a readiness probe", "gpu",
     lambda d: container(d, "DaemonSet", "infer-node-check").pop("readinessProbe")),
    ("drain", "terminationGracePeriodSeconds below preStop + --drain-timeout", "cpu",
     lambda d: pod(d, "Deployment", "infer-server").update(terminationGracePeriodSeconds=35)),
    ("drain", "the default grace period (30 s) and --drain-timeout 30", "gpu",
     lambda d: pod(d, "Deployment", "infer-server").pop("terminationGracePeriodSeconds")),
    ("drain", "no explicit --drain-timeout", "cpu",
     lambda d: set_args(container(d, "Deployment", "infer-server"), "--drain-timeout", None)),
    ("security", "a writable root filesystem", "cpu",
     lambda d: container(d, "Deployment", "infer-server")["securityContext"].update(readOnlyRootFilesystem=False)),
    ("security", "capabilities not dropped", "gpu",
     lambda d: container(d, "Job", "infer-batch")["securityContext"].pop("capabilities")),
    ("security", "a capability added", "cpu",
     lambda d: container(d, "DaemonSet", "infer-node-check")["securityContext"]["capabilities"].update(add=["DAC_OVERRIDE"])),
    ("security", "privilege escalation allowed", "cpu",
     lambda d: container(d, "Job", "infer-batch")["securityContext"].update(allowPrivilegeEscalation=True)),
    ("security", "no seccomp profile", "cpu",
     lambda d: pod(d, "Deployment", "infer-server")["securityContext"].pop("seccompProfile")),
    ("security", "root in the restricted namespace", "cpu",
     lambda d: pod(d, "Job", "infer-batch")["securityContext"].update(runAsNonRoot=False, runAsUser=0)),
    ("security", "a hostPath volume in the restricted namespace", "cpu",
     lambda d: pod(d, "Job", "infer-batch")["volumes"].append({"name": "host", "hostPath": {"path": "/etc"}})),
    ("security", "the node check's user left to the image", "gpu",
     lambda d: [pod(d, "DaemonSet", "infer-node-check")["securityContext"].pop(k) for k in ("runAsUser", "runAsNonRoot")]),
    ("security", "a container without a memory limit", "cpu",
     lambda d: container(d, "Deployment", "infer-server")["resources"]["limits"].pop("memory")),
    ("gpu-affinity", "a GPU server not bound to manifest-holds=true", "gpu",
     lambda d: pod(d, "Deployment", "infer-server").pop("affinity")),
    ("gpu-affinity", "a GPU Job bound to manifest-holds=false", "gpu",
     lambda d: pod(d, "Job", "infer-batch")["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
         "nodeSelectorTerms"][0]["matchExpressions"][0].update(values=["false"])),
    ("indexed-job", "completions that are not the N of --shard", "cpu",
     lambda d: find(d, "Job", "infer-batch")["spec"].update(completions=8, parallelism=8)),
    ("indexed-job", "parallelism above completions", "gpu",
     lambda d: find(d, "Job", "infer-batch")["spec"].update(parallelism=5)),
    ("indexed-job", "a fixed index instead of $(JOB_COMPLETION_INDEX)", "cpu",
     lambda d: set_args(container(d, "Job", "infer-batch"), "--shard", "0/4")),
    ("indexed-job", "one --output file for every pod", "cpu",
     lambda d: set_args(container(d, "Job", "infer-batch"), "--output", "/results/all.jsonl")),
    ("indexed-job", "an Indexed Job that runs no --shard", "gpu",
     lambda d: set_args(container(d, "Job", "infer-batch"), "--shard", None)),
]


class Rules(unittest.TestCase):
    def test_renders_as_they_are_pass(self):
        for name, docs in RENDERS.items():
            with self.subTest(render=name):
                self.assertEqual(k8s_rules.failed_rules(docs, gpu=(name == "gpu")), [])

    def test_every_rule_has_a_case_and_checks_something(self):
        self.assertEqual({c[0] for c in CASES}, {name for name, _ in k8s_rules.RULES})
        for name, result in k8s_rules.check(RENDERS["gpu"]).items():
            self.assertGreater(result.checked, 0, f"rule {name} checked nothing in the GPU render")

    def test_each_broken_render_fails_its_rule_only(self):
        for rule, what, render, change in CASES:
            with self.subTest(rule=rule, broken=what):
                docs = copy.deepcopy(RENDERS[render])
                change(docs)
                results = k8s_rules.check(docs)
                self.assertEqual(k8s_rules.failed_rules(docs, gpu=(render == "gpu")), [rule],
                                 {n: r.problems for n, r in results.items() if r.problems})

    def test_a_rule_with_nothing_to_check_fails(self):
        docs = [d for d in copy.deepcopy(RENDERS["cpu"]) if d.get("kind") != "Job"]
        self.assertIn("indexed-job", k8s_rules.failed_rules(docs))
        gpu_less = copy.deepcopy(RENDERS["cpu"])
        self.assertEqual(k8s_rules.failed_rules(gpu_less, gpu=True), ["gpu-affinity"])

    def test_command_line_exit_codes_and_lines(self):
        broken = copy.deepcopy(RENDERS["cpu"])
        pod(broken, "Deployment", "infer-server").update(terminationGracePeriodSeconds=10)
        with tempfile.TemporaryDirectory() as tmp:
            good, bad = os.path.join(tmp, "good.yaml"), os.path.join(tmp, "bad.yaml")
            for path, docs in ((good, RENDERS["cpu"]), (bad, broken)):
                with open(path, "w", encoding="utf-8") as f:
                    yaml.safe_dump_all(docs, f)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(k8s_rules.main([good]), 0)
            self.assertEqual(out.getvalue().count("PASS "), len(k8s_rules.RULES))
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(k8s_rules.main([bad]), 1)
            self.assertIn("FAIL drain: ", out.getvalue())
            self.assertIn("Deployment/infer/infer-server", out.getvalue())


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for name, path in zip(("cpu", "gpu"), sys.argv[1:3]):
        with open(path, encoding="utf-8") as f:
            RENDERS[name] = [d for d in yaml.safe_load_all(f) if d]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)
