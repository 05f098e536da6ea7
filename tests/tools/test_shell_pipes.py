#!/usr/bin/env python3
"""Pipelines under `set -o pipefail` whose reader stops early (CI's bundle rehearsal failed on one).

With pipefail, `writer | grep -q X` reports 141 when grep exits at its first match and the writer,
still writing, dies of SIGPIPE: as soon as the writer's output outgrows a pipe's buffer (64 KiB).
gpu-bundle.sh's `ldconfig -p | awk '... {print; exit}'` ended CI that way (exit 141) on a machine
whose loader cache is 77 KiB, and gpu-check.sh's `ldconfig -p | grep -q` lookups were false there.

1. tools/release/loader-cache.sh, the lookups that replaced them, against a fake ldconfig whose
   cache is 1 MiB with the wanted entries first, under `set -euo pipefail`; the old pipeline is run
   against the same fake to show the premise (141).
2. A lint of every bash script in the tree that sets pipefail: no pipeline into `grep -q`,
   `grep -m`, `head` or an awk program with `exit`, unless its status is dropped with `|| true`.

CTest runs it (label unit)."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LOADER_CACHE = os.path.join(ROOT, "tools", "release", "loader-cache.sh")

# A reader that stops before its input ends: grep -q/-m/--quiet/--max-count, head, awk with exit.
EARLY_READER = re.compile(
    r"(?<!\|)\|(?!\|)\s*(?:"
    r"grep\b[^|;]*\s(?:-[a-zA-Z]*[qm]|--quiet|--silent|--max-count)"
    r"|head\b"
    r"|awk\b[^|]*\bexit\b)")
DROPPED_STATUS = re.compile(r"\|\|\s*true\b")


def early_reader_lines(text):
    """(line number, logical line) of each pipeline into an early reader whose status counts."""
    found, logical, first = [], "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not logical:
            first = number
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        logical += line
        if line.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        if EARLY_READER.search(logical) and not DROPPED_STATUS.search(logical):
            found.append((first, logical.strip()))
        logical = ""
    return found


def bash_scripts():
    skip = {".git", "build", "build-asan", "build-windows"}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith("build")]
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as f:
                    head = f.readline()
                    text = head + f.read()
            except (UnicodeDecodeError, OSError):
                continue
            if name.endswith(".sh") or (head.startswith("#!") and "bash" in head):
                yield path, text


class FakeLdconfig:
    """A folder with an `ldconfig` that prints a 1 MiB cache, the wanted entries first."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        lines = [
            "\tlibopenblas.so.0 (libc6) => /usr/lib/i386-linux-gnu/libopenblas.so.0",
            "\tlibopenblas.so.0 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
            "\tlibcudart.so.13 (libc6,x86-64) => /opt/cuda/lib/libcudart.so.13",
        ] + [f"\tlibfiller{i}.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libfiller{i}.so.1"
             for i in range(16000)]
        cache = os.path.join(self.dir.name, "cache.txt")
        with open(cache, "w") as f:
            f.write(f"{len(lines)} libs found in cache `/etc/ld.so.cache'\n" + "\n".join(lines) + "\n")
        assert os.path.getsize(cache) > 1 << 20
        tool = os.path.join(self.dir.name, "ldconfig")
        with open(tool, "w") as f:
            f.write(f"#!/bin/sh\nexec cat '{cache}'\n")
        os.chmod(tool, 0o755)

    def bash(self, script):
        env = dict(os.environ, PATH=self.dir.name + os.pathsep + os.environ.get("PATH", ""))
        return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], env=env,
                              capture_output=True, text=True, timeout=60)


class LoaderCache(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeLdconfig()

    @classmethod
    def tearDownClass(cls):
        cls.fake.dir.cleanup()

    def test_the_old_pipelines_fail_on_a_large_cache(self):
        old = self.fake.bash("ldconfig -p | awk '$1 == \"libopenblas.so.0\" && /x86-64/ {print $NF; exit}'")
        self.assertEqual(old.returncode, 141, old)
        old = self.fake.bash('ldconfig -p | grep -q "libcudart.so.13"')
        self.assertEqual(old.returncode, 141, old)

    def test_the_path_is_the_first_x86_64_entry(self):
        r = self.fake.bash(f"source '{LOADER_CACHE}'\nld_cache_path libopenblas.so.0\necho done")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout.splitlines(),
                         ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", "done"])

    def test_a_missing_soname_fails_the_lookup(self):
        r = self.fake.bash(f"source '{LOADER_CACHE}'\n"
                           "if ld_cache_path libcudnn.so.9; then echo found; else echo missing; fi\n"
                           "ld_cache_path libfiller12.so.1")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout.splitlines(),
                         ["missing", "/usr/lib/x86_64-linux-gnu/libfiller12.so.1"])

    def test_in_ld_cache_matches_whole_sonames(self):
        r = self.fake.bash(f"source '{LOADER_CACHE}'\n"
                           "for s in libcudart.so.13 libcudart.so.1 libcudart.so libfiller15999.so.1 "
                           "libfiller15999.so ibcudart.so.13; do\n"
                           "  if in_ld_cache $s; then echo \"$s yes\"; else echo \"$s no\"; fi\n"
                           "done")
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout.splitlines(), [
            "libcudart.so.13 yes", "libcudart.so.1 no", "libcudart.so no",
            "libfiller15999.so.1 yes", "libfiller15999.so no", "ibcudart.so.13 no"])

    def test_a_failing_ldconfig_is_an_empty_cache(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "ldconfig"), "w") as f:
                f.write("#!/bin/sh\necho 'ldconfig: cannot read /etc/ld.so.cache' >&2\nexit 1\n")
            os.chmod(os.path.join(d, "ldconfig"), 0o755)
            env = dict(os.environ, PATH=d + os.pathsep + os.environ.get("PATH", ""))
            r = subprocess.run(["bash", "-c", f"set -euo pipefail\nsource '{LOADER_CACHE}'\n"
                                "in_ld_cache libc.so.6 || echo absent\n"
                                "ld_cache_path libc.so.6 || echo 'no path'"],
                               env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "absent\nno path\n"), r)


class PipefailLint(unittest.TestCase):
    def test_the_lint_flags_what_failed(self):
        bad = ("set -euo pipefail\n"
               "x=\"$(ldconfig -p | awk '$1 == \"a\" {print $NF; exit}')\"\n"
               "ldconfig -p 2>/dev/null | grep -q \" $1 \"\n"
               "foo | \\\n  head -n1\n"
               "bar | grep -m1 -v security || true\n"
               "baz || grep -q x file\n"
               "qux | grep -oE x | sed -n 1p\n")
        self.assertEqual([n for n, _ in early_reader_lines(bad)], [2, 3, 4])

    def test_no_pipefail_script_pipes_into_an_early_reader(self):
        offenders = []
        scripts = 0
        for path, text in bash_scripts():
            if "pipefail" not in text:
                continue
            scripts += 1
            for number, line in early_reader_lines(text):
                offenders.append(f"{os.path.relpath(path, ROOT)}:{number}: {line}")
        self.assertGreater(scripts, 10)
        self.assertEqual(offenders, [], "\n".join(offenders))


if __name__ == "__main__":
    unittest.main(verbosity=2)
