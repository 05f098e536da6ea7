#!/usr/bin/env python3
"""The node check's loop, deploy/kubernetes/base/node-check/node-check.sh, run as the DaemonSet runs
it but outside a cluster: /bin/sh, its paths in a temporary folder instead of the host's.

    test_node_check.py INFER_EXE [unittest arguments]       (or INFER_EXE in the environment)

  - with a stand-in for infer whose exit code the test sets: the loop passes --check --nfd FILE
    --nfd-expiry SECONDS, creates the ready marker when the check holds and removes it when it
    stops holding, writes its heartbeat, and on SIGTERM exits 0 at once (also mid-sleep), removing
    the marker and keeping the feature file (its expiry retires the labels);
  - with the real infer: the feature file it writes is one NFD reads (tests/deploy/nfd_feature_file.py),
    its manifest-holds agrees with `infer --check`'s exit code, and so does the marker.
"""

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "deploy", "kubernetes", "base", "node-check", "node-check.sh")
sys.path.insert(0, HERE)
import nfd_feature_file  # noqa: E402

INFER = None

# A stand-in for infer: records its arguments, writes a feature file as infer would (a dot-file, then
# a rename), and exits with the code in $STUB_DIR/rc.
STUB = """#!/bin/sh
printf '%s\\n' "$*" >"$STUB_DIR/args"
rc=$(cat "$STUB_DIR/rc")
file="$3"
tmp="$(dirname "$file")/.$(basename "$file").tmp"
holds=false; [ "$rc" = 0 ] && holds=true
printf '# stand-in\\n# +expiry-time=2099-01-01T00:00:00Z\\ninfer.feature.node.kubernetes.io/manifest-holds=%s\\n' "$holds" >"$tmp"
mv "$tmp" "$file"
echo "result: stand-in exit $rc"
exit "$rc"
"""


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Loop:
    """node-check.sh running with its files in a temporary folder."""

    def __init__(self, tmp, infer, period=1, expiry=120):
        self.features = os.path.join(tmp, "features.d", "infer")
        self.marker = os.path.join(tmp, "validations", "infer-ready")
        self.heartbeat = os.path.join(tmp, "heartbeat")
        os.makedirs(os.path.dirname(self.features))
        os.makedirs(os.path.dirname(self.marker))
        env = dict(os.environ, INFER_EXE=infer, INFER_CHECK_PERIOD_S=str(period), INFER_NFD_EXPIRY_S=str(expiry),
                   INFER_NFD_FILE=self.features, INFER_READY_FILE=self.marker, INFER_HEARTBEAT_FILE=self.heartbeat)
        self.proc = subprocess.Popen(["/bin/sh", SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)

    def beats(self):
        try:
            with open(self.heartbeat, encoding="utf-8") as f:
                return int(f.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def next_beat(self, timeout=60):
        """Waits for the loop to finish its next check (a newer heartbeat, or the first)."""
        before = os.stat(self.heartbeat).st_mtime_ns if os.path.exists(self.heartbeat) else 0
        wait_for(lambda: os.path.exists(self.heartbeat) and os.stat(self.heartbeat).st_mtime_ns != before
                 and self.beats() > 0, timeout, "the node check's heartbeat")

    def terminate(self):
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        return self.proc.returncode, time.monotonic() - start, out


def set_exit_code(stub_dir, code):
    """The exit code the stand-in infer gives from its next run on."""
    with open(os.path.join(stub_dir, "rc"), "w", encoding="utf-8") as f:
        f.write(str(code))


def make_stub(tmp):
    """The stand-in infer (STUB) in tmp/stub, exiting 0 until told otherwise: (its folder, its path)."""
    stub_dir = os.path.join(tmp, "stub")
    os.makedirs(stub_dir)
    stub = os.path.join(stub_dir, "infer")
    with open(stub, "w", encoding="utf-8") as f:
        f.write(STUB)
    os.chmod(stub, stat.S_IRWXU)
    set_exit_code(stub_dir, 0)
    os.environ["STUB_DIR"] = stub_dir
    return stub_dir, stub


class NodeCheckLoop(unittest.TestCase):
    def test_marker_follows_the_check_and_sigterm_exits_at_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            stub_dir, stub = make_stub(tmp)
            loop = Loop(tmp, stub, period=1, expiry=600)
            try:
                loop.next_beat()
                with open(os.path.join(stub_dir, "args"), encoding="utf-8") as f:
                    self.assertEqual(f.read().split(), ["--check", "--nfd", loop.features, "--nfd-expiry", "600"])
                self.assertTrue(os.path.exists(loop.marker), "the check held and there is no ready marker")
                set_exit_code(stub_dir, 5)
                loop.next_beat()
                loop.next_beat()  # a check that started before the change may have ended first
                self.assertFalse(os.path.exists(loop.marker), "the check failed and the ready marker stayed")
                set_exit_code(stub_dir, 3)  # the feature file cannot be written: no marker either
                loop.next_beat()
                loop.next_beat()
                self.assertFalse(os.path.exists(loop.marker))
                set_exit_code(stub_dir, 0)
                loop.next_beat()
                loop.next_beat()
                self.assertTrue(os.path.exists(loop.marker), "the check holds again and there is no marker")
            finally:
                code, took, out = loop.terminate()
            self.assertEqual(code, 0, out)
            self.assertLess(took, 5, f"SIGTERM took {took:.1f} s")
            self.assertFalse(os.path.exists(loop.marker), "SIGTERM left the ready marker")
            self.assertTrue(os.path.exists(loop.features), "SIGTERM removed the feature file (its expiry retires it)")
            self.assertIn("exit 5: manifest does not hold", out)
            self.assertIn("result: stand-in exit 0", out)

    def test_sigterm_during_a_long_sleep(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, stub = make_stub(tmp)
            loop = Loop(tmp, stub, period=3600)
            loop.next_beat()
            code, took, out = loop.terminate()
            self.assertEqual(code, 0, out)
            self.assertLess(took, 5, f"SIGTERM mid-sleep took {took:.1f} s")
            self.assertFalse(os.path.exists(loop.marker))

    def test_real_infer_writes_a_feature_file_nfd_reads(self):
        help_text = subprocess.run([INFER, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   timeout=60).stdout
        self.assertIn("--nfd", help_text, f"{INFER} has no --nfd")
        check = subprocess.run([INFER, "--check"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertIn(check.returncode, (0, 5), check.stderr)
        holds = "true" if check.returncode == 0 else "false"
        with tempfile.TemporaryDirectory() as tmp:
            loop = Loop(tmp, INFER, period=2, expiry=900)
            try:
                loop.next_beat(timeout=120)
                problems, labels = nfd_feature_file.problems_of(loop.features, holds=holds, expiry_s=900)
                self.assertEqual(problems, [])
                self.assertEqual(os.path.exists(loop.marker), holds == "true")
                self.assertEqual([f for f in os.listdir(os.path.dirname(loop.features)) if f.startswith(".")], [],
                                 "a temporary dot-file left in features.d")
            finally:
                code, took, out = loop.terminate()
            self.assertEqual(code, 0, out)
            self.assertFalse(os.path.exists(loop.marker))
            print(f"test_node_check: manifest-holds={holds}; labels: {labels}", file=sys.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and not args[0].startswith("-"):
        INFER = args.pop(0)
    else:
        INFER = os.environ.get("INFER_EXE")
    if not INFER or not os.access(INFER, os.X_OK):
        sys.exit(f"test_node_check: no infer executable (argument or INFER_EXE): {INFER!r}")
    INFER = os.path.abspath(INFER)
    unittest.main(argv=[sys.argv[0]] + args, verbosity=2)
