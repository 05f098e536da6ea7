#!/usr/bin/env python3
"""Rules of ours for the rendered Kubernetes manifests, the ones a schema validator cannot see.

    k8s_rules.py [--gpu] RENDERED.yaml...

Each file is one rendered overlay (`kubectl kustomize deploy/kubernetes/overlays/cpu`), a whole: a
Service's selector must match a pod template of the same file. For each rule, prints
"PASS rule: N checked" or "FAIL rule: object: what is wrong" per problem, and exits 1 if any rule
failed. A rule that checked nothing fails too, so a rule cannot pass because what it reads moved;
gpu-affinity may check nothing in a render without GPUs, unless --gpu says the render has them.

The rules (RULES below, each a function of one render):
  names           object, container, port and volume names are DNS-1123 (a Service's and a
                  Namespace's a label, a Job's at most 63 characters: it becomes a label value)
  labels          label keys and values (metadata, templates, selectors, nodeSelector, affinity)
  selectors       a workload's selector matches its own template; a Service and a PDB select some
                  workload's pods; topology spread selectors match their own pods
  references      an HPA's scaleTargetRef, a volumeMount's volume, a configMap or PVC volume name
                  objects that exist in the render
  probe-ports     probe ports and a Service's targetPort are ports of the container(s) (name or number)
  probes          a container of a Deployment or DaemonSet has readiness and liveness probes
  drain           a container running `infer serve` passes --drain-timeout, and the pod's
                  terminationGracePeriodSeconds exceeds it plus its preStop sleep
  security        every container: no privilege escalation, read-only root FS, capabilities ALL
                  dropped and none added, not privileged, seccomp RuntimeDefault, resources; non-root
                  unless its namespace's Pod Security level is "privileged"; in a namespace at
                  "restricted", no hostPath, host network, PID or IPC
  gpu-affinity    a pod taking nvidia.com/gpu requires infer.feature.node.kubernetes.io/manifest-holds=true
  indexed-job     an Indexed Job's container runs --shard $(JOB_COMPLETION_INDEX)/N with N equal to
                  completions, and an --output naming $(JOB_COMPLETION_INDEX); parallelism <= completions

Needs PyYAML (the venv of tools/ci/check-kubernetes.sh has it).
"""

import re
import sys

import yaml

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod")
INDEX_VAR = "$(JOB_COMPLETION_INDEX)"
MANIFEST_HOLDS = "infer.feature.node.kubernetes.io/manifest-holds"


def ident(doc):
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{doc.get('kind')}/{(ns + '/') if ns else ''}{meta.get('name')}"


def pod_template(doc):
    """The pod template of a workload: (its metadata, its spec), or None."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "Pod":
        return doc.get("metadata") or {}, spec
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    if kind in WORKLOAD_KINDS:
        template = spec.get("template") or {}
        return template.get("metadata") or {}, template.get("spec") or {}
    return None


def workloads(docs):
    """(doc, template metadata, pod spec) for every workload."""
    for doc in docs:
        template = pod_template(doc)
        if template is not None:
            yield doc, template[0], template[1]


def containers(pod_spec):
    return list(pod_spec.get("initContainers") or []) + list(pod_spec.get("containers") or [])


def namespace_of(doc):
    return (doc.get("metadata") or {}).get("namespace") or "default"


def selector_matches(selector, labels):
    """A LabelSelector (matchLabels, matchExpressions) against a label map. An empty selector
    matches nothing here: none of ours should be empty."""
    if not selector:
        return False
    labels = labels or {}
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return False
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for e in expressions:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def label_key_problem(key):
    if not isinstance(key, str) or not key:
        return f"label key {key!r} is empty or not a string"
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"label key {key!r}: the prefix is not a DNS-1123 subdomain of at most 253 characters"
    if len(name) > 63 or not LABEL_NAME.match(name):
        return f"label key {key!r}: the name is not 1 to 63 of [A-Za-z0-9-_.], alphanumeric at both ends"
    return None


def label_value_problem(value):
    if not isinstance(value, str):
        return f"label value {value!r} is not a string (quote it)"
    if value and (len(value) > 63 or not LABEL_NAME.match(value)):
        return f"label value {value!r} is not at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends"
    return None


class Checks:
    """What one rule found in one render: the number of items checked and the problems."""

    def __init__(self):
        self.checked = 0
        self.problems = []

    def check(self, ok, problem):
        self.checked += 1
        if not ok:
            self.problems.append(problem)


# ---------------------------------------------------------------------------------------------

def rule_names(docs):
    c = Checks()
    for doc in docs:
        kind, name = doc.get("kind"), (doc.get("metadata") or {}).get("name") or ""
        if kind in ("Namespace", "Service"):
            pattern, what = (DNS1035_LABEL, "an RFC 1035 label") if kind == "Service" else (DNS1123_LABEL, "a DNS-1123 label")
            c.check(len(name) <= 63 and pattern.match(name), f"{ident(doc)}: the name is not {what} of at most 63 characters")
        elif kind in ("Job", "CronJob"):
            c.check(len(name) <= 63 and DNS1123_LABEL.match(name),
                    f"{ident(doc)}: the name is not a DNS-1123 label of at most 63 characters (it becomes a pod label value)")
        else:
            c.check(len(name) <= 253 and DNS1123_SUBDOMAIN.match(name), f"{ident(doc)}: the name is not a DNS-1123 subdomain")
        ns = (doc.get("metadata") or {}).get("namespace")
        if ns is not None:
            c.check(len(ns) <= 63 and DNS1123_LABEL.match(ns), f"{ident(doc)}: the namespace {ns!r} is not a DNS-1123 label")
        template = pod_template(doc)
        if template is None:
            for port in ((doc.get("spec") or {}).get("ports") or []) if kind == "Service" else []:
                pname = port.get("name", "")
                c.check(len(pname) <= 63 and DNS1123_LABEL.match(pname), f"{ident(doc)}: Service port name {pname!r} is not a DNS-1123 label")
            continue
        spec = template[1]
        for ctr in containers(spec):
            cname = ctr.get("name", "")
            c.check(len(cname) <= 63 and DNS1123_LABEL.match(cname), f"{ident(doc)}: container name {cname!r} is not a DNS-1123 label")
            for port in ctr.get("ports") or []:
                if "name" in port:
                    pname = port["name"]
                    c.check(len(pname) <= 15 and IANA_SVC_NAME.match(pname) and "--" not in pname and re.search("[a-z]", pname),
                            f"{ident(doc)}: container port name {pname!r} is not an IANA service name (at most 15 of [a-z0-9-], a letter)")
        for vol in spec.get("volumes") or []:
            vname = vol.get("name", "")
            c.check(len(vname) <= 63 and DNS1123_LABEL.match(vname), f"{ident(doc)}: volume name {vname!r} is not a DNS-1123 label")
    return c


def label_maps(doc):
    """(where, label map) for the maps of labels an object carries or selects on."""
    yield "metadata.labels", (doc.get("metadata") or {}).get("labels") or {}
    spec = doc.get("spec") or {}
    if doc.get("kind") == "Service":
        yield "spec.selector", spec.get("selector") or {}
    selector = spec.get("selector")
    if isinstance(selector, dict) and doc.get("kind") != "Service":
        yield "spec.selector.matchLabels", selector.get("matchLabels") or {}
    template = pod_template(doc)
    if template is not None:
        meta, pod = template
        yield "template labels", meta.get("labels") or {}
        yield "nodeSelector", pod.get("nodeSelector") or {}
        for tsc in pod.get("topologySpreadConstraints") or []:
            yield "topologySpreadConstraints", (tsc.get("labelSelector") or {}).get("matchLabels") or {}


def expressions(doc):
    """(where, key, operator, values) of node affinity and label selector expressions."""
    spec = doc.get("spec") or {}
    selector = spec.get("selector")
    if isinstance(selector, dict) and doc.get("kind") != "Service":
        for e in selector.get("matchExpressions") or []:
            yield "spec.selector", e.get("key"), e.get("operator"), e.get("values") or []
    template = pod_template(doc)
    if template is None:
        return
    node = ((template[1].get("affinity") or {}).get("nodeAffinity") or {})
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    preferred = [p.get("preference") or {} for p in node.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
    for term in list(required) + preferred:
        for e in term.get("matchExpressions") or []:
            yield "nodeAffinity", e.get("key"), e.get("operator"), e.get("values") or []


def rule_labels(docs):
    c = Checks()
    for doc in docs:
        for where, labels in label_maps(doc):
            for key, value in labels.items():
                problem = label_key_problem(key) or label_value_problem(value)
                c.check(problem is None, f"{ident(doc)}: {where}: {problem}")
        for where, key, op, values in expressions(doc):
            problem = label_key_problem(key)
            if problem is None and op in ("In", "NotIn"):
                problem = next((p for p in map(label_value_problem, values) if p), None)
            c.check(problem is None, f"{ident(doc)}: {where}: {problem}")
    return c


def rule_selectors(docs):
    c = Checks()
    pods = [(namespace_of(d), ident(d), meta.get("labels") or {}) for d, meta, _ in workloads(docs)]
    for doc, meta, spec in workloads(docs):
        selector = (doc.get("spec") or {}).get("selector")
        if doc.get("kind") in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet") or selector is not None:
            c.check(selector_matches(selector, meta.get("labels")),
                    f"{ident(doc)}: spec.selector does not match the pod template's labels {meta.get('labels')}")
        for tsc in spec.get("topologySpreadConstraints") or []:
            c.check(selector_matches(tsc.get("labelSelector"), meta.get("labels")),
                    f"{ident(doc)}: a topologySpreadConstraint's labelSelector does not match the pod's own labels")
    for doc in docs:
        ns = namespace_of(doc)
        if doc.get("kind") == "Service":
            sel = (doc.get("spec") or {}).get("selector") or {}
            hits = [i for n, i, labels in pods if n == ns and sel and all(labels.get(k) == v for k, v in sel.items())]
            c.check(hits, f"{ident(doc)}: spec.selector {sel} selects no pod template in namespace {ns}")
        elif doc.get("kind") == "PodDisruptionBudget":
            sel = (doc.get("spec") or {}).get("selector")
            hits = [i for n, i, labels in pods if n == ns and selector_matches(sel, labels)]
            c.check(hits, f"{ident(doc)}: spec.selector selects no pod template in namespace {ns}")
    return c


def rule_references(docs):
    c = Checks()
    present = {(d.get("kind"), namespace_of(d), (d.get("metadata") or {}).get("name")) for d in docs}
    for doc in docs:
        if doc.get("kind") == "HorizontalPodAutoscaler":
            ref = (doc.get("spec") or {}).get("scaleTargetRef") or {}
            c.check((ref.get("kind"), namespace_of(doc), ref.get("name")) in present,
                    f"{ident(doc)}: scaleTargetRef {ref.get('kind')}/{ref.get('name')} is not in the render")
    for doc, _, spec in workloads(docs):
        ns = namespace_of(doc)
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        for ctr in containers(spec):
            for mount in ctr.get("volumeMounts") or []:
                c.check(mount.get("name") in volumes,
                        f"{ident(doc)}: container {ctr.get('name')} mounts volume {mount.get('name')!r}, which the pod does not declare")
        for vol in volumes.values():
            if "configMap" in vol:
                name = vol["configMap"].get("name")
                c.check(vol["configMap"].get("optional") or ("ConfigMap", ns, name) in present,
                        f"{ident(doc)}: volume {vol.get('name')} names ConfigMap {name}, which is not in the render")
            if "persistentVolumeClaim" in vol:
                name = vol["persistentVolumeClaim"].get("claimName")
                c.check(("PersistentVolumeClaim", ns, name) in present,
                        f"{ident(doc)}: volume {vol.get('name')} names PersistentVolumeClaim {name}, which is not in the render")
    return c


def probes_of(ctr):
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = ctr.get(kind)
        if probe:
            for handler in ("httpGet", "tcpSocket", "grpc"):
                if handler in probe:
                    yield kind, probe[handler].get("port")


def port_exists(port, ctrs):
    if isinstance(port, int):
        return any(p.get("containerPort") == port for ctr in ctrs for p in ctr.get("ports") or [])
    return any(p.get("name") == port for ctr in ctrs for p in ctr.get("ports") or [])


def rule_probe_ports(docs):
    c = Checks()
    for doc, _, spec in workloads(docs):
        for ctr in containers(spec):
            for kind, port in probes_of(ctr):
                c.check(port is not None and port_exists(port, [ctr]),
                        f"{ident(doc)}: container {ctr.get('name')}: {kind} port {port!r} is not one of its ports")
    pods = [(namespace_of(d), meta.get("labels") or {}, containers(spec)) for d, meta, spec in workloads(docs)]
    for doc in docs:
        if doc.get("kind") != "Service":
            continue
        sel = (doc.get("spec") or {}).get("selector") or {}
        selected = [ctrs for ns, labels, ctrs in pods
                    if ns == namespace_of(doc) and sel and all(labels.get(k) == v for k, v in sel.items())]
        if not selected:
            continue  # the selectors rule says so
        for port in (doc.get("spec") or {}).get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            c.check(all(port_exists(target, ctrs) for ctrs in selected),
                    f"{ident(doc)}: port {port.get('name')}: targetPort {target!r} is not a port of every pod it selects")
    return c


def rule_probes(docs):
    c = Checks()
    for doc, _, spec in workloads(docs):
        if doc.get("kind") not in ("Deployment", "DaemonSet", "StatefulSet"):
            continue
        for ctr in spec.get("containers") or []:
            for kind in ("readinessProbe", "livenessProbe"):
                c.check(bool(ctr.get(kind)), f"{ident(doc)}: container {ctr.get('name')} has no {kind}")
    return c


def option_value(args, name):
    """The value of --name VALUE or --name=VALUE in an argument list, or None."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def prestop_sleep(ctr):
    pre = (ctr.get("lifecycle") or {}).get("preStop") or {}
    if "sleep" in pre:
        return int(pre["sleep"].get("seconds", 0))
    command = (pre.get("exec") or {}).get("command") or []
    if len(command) == 2 and command[0] in ("sleep", "/bin/sleep", "/usr/bin/sleep"):
        return int(command[1])
    return 0 if not pre else None


def rule_drain(docs):
    c = Checks()
    for doc, _, spec in workloads(docs):
        grace = spec.get("terminationGracePeriodSeconds", 30)
        for ctr in spec.get("containers") or []:
            args = [str(a) for a in (ctr.get("command") or [])[1:] + (ctr.get("args") or [])]
            if "serve" not in args:
                continue
            drain = option_value(args, "--drain-timeout")
            c.check(drain is not None and drain.isdigit(),
                    f"{ident(doc)}: container {ctr.get('name')} runs infer serve without an explicit --drain-timeout")
            sleep = prestop_sleep(ctr)
            c.check(sleep is not None, f"{ident(doc)}: container {ctr.get('name')}: a preStop hook other than a sleep; its length is unknown")
            if drain is not None and drain.isdigit() and sleep is not None:
                c.check(grace > int(drain) + sleep,
                        f"{ident(doc)}: terminationGracePeriodSeconds {grace} is not above preStop's sleep {sleep} s "
                        f"plus --drain-timeout {drain} s: the kubelet would kill the drain")
    return c


def namespace_levels(docs):
    levels = {}
    for doc in docs:
        if doc.get("kind") == "Namespace":
            labels = (doc.get("metadata") or {}).get("labels") or {}
            levels[(doc.get("metadata") or {}).get("name")] = labels.get("pod-security.kubernetes.io/enforce")
    return levels


def rule_security(docs):
    c = Checks()
    levels = namespace_levels(docs)
    for doc, _, spec in workloads(docs):
        level = levels.get(namespace_of(doc))
        c.check(level in ("privileged", "baseline", "restricted"),
                f"{ident(doc)}: its namespace {namespace_of(doc)} is not in the render with a pod-security.kubernetes.io/enforce level")
        pod_sc = spec.get("securityContext") or {}
        if level == "restricted":
            c.check(not any("hostPath" in v for v in spec.get("volumes") or []), f"{ident(doc)}: a hostPath volume in a restricted namespace")
            c.check(not (spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC")),
                    f"{ident(doc)}: host network, PID or IPC in a restricted namespace")
        for ctr in containers(spec):
            sc = ctr.get("securityContext") or {}
            where = f"{ident(doc)}: container {ctr.get('name')}"
            c.check(sc.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation is not false")
            c.check(sc.get("readOnlyRootFilesystem") is True, f"{where}: readOnlyRootFilesystem is not true")
            c.check(not sc.get("privileged"), f"{where}: privileged")
            caps = sc.get("capabilities") or {}
            c.check("ALL" in (caps.get("drop") or []), f"{where}: capabilities do not drop ALL")
            c.check(not caps.get("add"), f"{where}: capabilities added: {caps.get('add')}")
            seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
            c.check(seccomp in ("RuntimeDefault", "Localhost"), f"{where}: seccompProfile is {seccomp}, not RuntimeDefault")
            non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
            user = sc.get("runAsUser", pod_sc.get("runAsUser"))
            if level == "privileged":
                c.check(non_root is True or user is not None,
                        f"{where}: the user is left to the image: say runAsNonRoot, or runAsUser 0 and why")
            else:
                c.check(non_root is True and user != 0, f"{where}: not runAsNonRoot (with a non-zero runAsUser)")
            resources = ctr.get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            c.check("cpu" in requests and "memory" in requests and "memory" in limits,
                    f"{where}: resources lack requests.cpu, requests.memory or limits.memory")
    return c


def rule_gpu_affinity(docs):
    c = Checks()
    for doc, _, spec in workloads(docs):
        takes_gpu = any("nvidia.com/gpu" in ((ctr.get("resources") or {}).get("limits") or {}) for ctr in containers(spec))
        if not takes_gpu:
            continue
        terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
                  .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
        by_selector = (spec.get("nodeSelector") or {}).get(MANIFEST_HOLDS) == "true"
        by_terms = bool(terms) and all(
            any(e.get("key") == MANIFEST_HOLDS and e.get("operator") == "In" and e.get("values") == ["true"]
                for e in term.get("matchExpressions") or []) for term in terms)
        c.check(by_selector or by_terms, f"{ident(doc)}: takes nvidia.com/gpu but does not require {MANIFEST_HOLDS}=true")
    return c


def rule_indexed_job(docs):
    c = Checks()
    for doc in docs:
        if doc.get("kind") != "Job" or (doc.get("spec") or {}).get("completionMode") != "Indexed":
            continue
        spec = doc["spec"]
        completions, parallelism = spec.get("completions"), spec.get("parallelism", 1)
        c.check(isinstance(completions, int) and completions >= 1, f"{ident(doc)}: an Indexed Job without completions")
        c.check(isinstance(parallelism, int) and parallelism <= (completions or 0),
                f"{ident(doc)}: parallelism {parallelism} exceeds completions {completions}")
        sharded = 0
        for ctr in (spec.get("template") or {}).get("spec", {}).get("containers") or []:
            args = [str(a) for a in (ctr.get("command") or [])[1:] + (ctr.get("args") or [])]
            shard = option_value(args, "--shard")
            if shard is None:
                continue
            sharded += 1
            index, _, count = shard.partition("/")
            c.check(index == INDEX_VAR, f"{ident(doc)}: --shard {shard}: the index is not {INDEX_VAR}")
            c.check(count.isdigit() and int(count) == completions,
                    f"{ident(doc)}: --shard {shard}: N is not completions ({completions}): shards would be lost or run twice")
            output = option_value(args, "--output")
            c.check(output is not None and INDEX_VAR in output,
                    f"{ident(doc)}: --output {output} does not name {INDEX_VAR}: the pods would write one file")
        c.check(sharded > 0, f"{ident(doc)}: an Indexed Job whose containers run no --shard")
    return c


RULES = [
    ("names", rule_names),
    ("labels", rule_labels),
    ("selectors", rule_selectors),
    ("references", rule_references),
    ("probe-ports", rule_probe_ports),
    ("probes", rule_probes),
    ("drain", rule_drain),
    ("security", rule_security),
    ("gpu-affinity", rule_gpu_affinity),
    ("indexed-job", rule_indexed_job),
]

# Rules that may have nothing to check in a render: the CPU overlay takes no GPU.
OPTIONAL = {"gpu-affinity"}


def check(docs):
    """{rule: Checks} for one render (a list of objects)."""
    docs = [d for d in docs if isinstance(d, dict)]
    return {name: fn(docs) for name, fn in RULES}


def failed_rules(docs, gpu=False):
    """The names of the rules a render fails (for the tests)."""
    optional = set() if gpu else OPTIONAL
    return sorted(name for name, r in check(docs).items() if r.problems or (r.checked == 0 and name not in optional))


def main(argv):
    gpu = "--gpu" in argv
    paths = [a for a in argv if a != "--gpu"]
    if not paths or any(p.startswith("-") for p in paths):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    optional = set() if gpu else OPTIONAL
    failed = False
    for path in paths:
        with open(path, encoding="utf-8") as f:
            docs = list(yaml.safe_load_all(f))
        for name, result in check(docs).items():
            if result.problems:
                failed = True
                for problem in result.problems:
                    print(f"FAIL {name}: {path}: {problem}")
            elif result.checked == 0 and name not in optional:
                failed = True
                print(f"FAIL {name}: {path}: checked nothing (did the manifests move?)")
            else:
                note = " (nothing takes a GPU here)" if result.checked == 0 else ""
                print(f"PASS {name}: {path}: {result.checked} checked{note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
