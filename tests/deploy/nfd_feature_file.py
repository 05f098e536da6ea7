#!/usr/bin/env python3
"""Checks a Node Feature Discovery local feature file as `infer --check --nfd PATH` writes it.

    nfd_feature_file.py FILE [--holds true|false] [--expiry SECONDS]

What NFD reads (its source/local/local.go and docs/usage/customization-guide.md): a file in
features.d whose name does not start with '.', at most 65536 bytes, lines "key=value", "#" comments,
and the directive "# +expiry-time=<RFC 3339>" applying to the lines after it. What infer promises on
top (docs/kubernetes.md): one expiry-time, in UTC, before every label and in the future (within
--expiry seconds, with a minute's slack, when given); every key infer.feature.node.kubernetes.io/NAME
with NAME one of the documented labels, at most once; names and values Kubernetes label syntax, no
value empty; manifest-holds present (and equal to --holds when given), version present.
Prints one line per problem and exits 1, or prints the labels and exits 0. Python's standard
library only: the container checks can run it against a file a container wrote.
"""

import datetime
import os
import re
import sys

PREFIX = "infer.feature.node.kubernetes.io/"
MAX_BYTES = 65536
LABEL = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
EXPIRY = re.compile(r"^# \+expiry-time=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$")
# The labels docs/kubernetes.md documents, each with the form of its value.
VALUES = {
    "manifest-holds": r"true|false",
    "backend": r"cu\d+",
    "cuda-major": r"\d+",
    "driver-release": r"\d+(\.\d+)*",
    "driver-major": r"\d+",
    "cuda-driver": r"\d+\.\d+",
    "cuda-runtime": r"\d+(\.\d+)*",
    "cudnn-version": r"\d+(\.\d+)*",
    "gpu-count": r"\d+",
    "gpu-product": r".+",
    "gpu-compute-capability": r"\d+\.\d+",
    "gpu-compute-major": r"\d+",
    "manifest-sha256": r"[0-9a-f]{32}",
    "first-failure": r".+",
    "standin": r"true",
    "version": r".+",
}


def problems_of(path, holds=None, expiry_s=None, now=None):
    """(problems, labels) of the feature file at path."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    problems, labels = [], {}
    if os.path.basename(path).startswith("."):
        problems.append(f"{path}: a dot-file, which NFD ignores")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) > MAX_BYTES:
        problems.append(f"{path}: {len(data)} bytes, over NFD's limit of {MAX_BYTES}: NFD ignores the file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"{path}: not UTF-8: {e}"], labels
    expiries = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        where = f"{path}:{number}"
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("# +"):
                match = EXPIRY.match(line)
                if not match:
                    problems.append(f"{where}: a directive that is not '# +expiry-time=YYYY-MM-DDThh:mm:ssZ': {line!r}")
                    continue
                if labels:
                    problems.append(f"{where}: the expiry-time comes after labels, which it does not cover")
                expiries.append(datetime.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%SZ")
                                .replace(tzinfo=datetime.timezone.utc))
            continue
        key, sep, value = line.partition("=")
        if not sep:
            problems.append(f"{where}: no '=': NFD would publish {key!r} as \"true\"")
        if not key.startswith(PREFIX):
            problems.append(f"{where}: the key {key!r} is not under {PREFIX}")
            continue
        name = key[len(PREFIX):]
        if name not in VALUES:
            problems.append(f"{where}: {name!r} is not a documented label (docs/kubernetes.md)")
        if len(name) > 63 or not LABEL.match(name):
            problems.append(f"{where}: the name {name!r} is not Kubernetes label syntax")
        if not value or len(value) > 63 or not LABEL.match(value):
            problems.append(f"{where}: the value {value!r} of {name} is empty or not Kubernetes label syntax")
        elif name in VALUES and not re.fullmatch(VALUES[name], value):
            problems.append(f"{where}: the value {value!r} of {name} is not of the form {VALUES[name]}")
        if name in labels:
            problems.append(f"{where}: {name} a second time")
        labels[name] = value
    if len(expiries) != 1:
        problems.append(f"{path}: {len(expiries)} expiry-time directives, not one")
    for expiry in expiries:
        if expiry <= now:
            problems.append(f"{path}: the expiry-time {expiry.isoformat()} has passed: NFD drops every label")
        if expiry_s is not None and abs((expiry - now).total_seconds() - expiry_s) > 60:
            problems.append(f"{path}: the expiry-time is {(expiry - now).total_seconds():.0f} s ahead, not {expiry_s}")
    for required in ("manifest-holds", "version"):
        if required not in labels:
            problems.append(f"{path}: no {required} label")
    if holds is not None and labels.get("manifest-holds") not in (None, holds):
        problems.append(f"{path}: manifest-holds={labels.get('manifest-holds')}, expected {holds}")
    if labels.get("manifest-holds") == "false" and "first-failure" not in labels:
        problems.append(f"{path}: manifest-holds=false without first-failure")
    return problems, labels


def main(argv):
    args = list(argv)
    holds = expiry_s = None
    if "--holds" in args:
        i = args.index("--holds")
        holds = args[i + 1]
        del args[i:i + 2]
    if "--expiry" in args:
        i = args.index("--expiry")
        expiry_s = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    problems, labels = problems_of(args[0], holds, expiry_s)
    for p in problems:
        print(f"FAIL {p}")
    if not problems:
        for name, value in labels.items():
            print(f"{PREFIX}{name}={value}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
