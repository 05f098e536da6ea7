#!/usr/bin/env python3
"""A run stopped by a signal ends on a whole line (issue 31, app/interrupt.h).

    test_interrupt.py INFER_EXE [unittest arguments]

`infer --json` (and the text output) classifies a folder of images made afresh with random pixels
(the seed is printed) into a pipe, and SIGINT, SIGTERM or SIGHUP is sent at a random moment, many
times. The reader is fast in some runs and slow in others (small reads with pauses), so that infer
is also caught blocked in the middle of writing a line to a full pipe. Each time:
  - everything that reached the pipe is whole lines: each ends with a newline and is a JSON object
    with its classes (or, as text, a result line);
  - infer ends by that signal (a shell shows 128 + N), within 2 s of it, infer's own bound (an alarm),
    plus TEARDOWN_S for this shared two-core machine to schedule and reap the process;
  - with --output, the folder holds no file afterwards: neither the results nor a temporary file.
A signal the run was started with ignored (nohup's SIGHUP) stays ignored. Bounded: RUNS runs of at
most PROCESS_TIMEOUT s each. Python's standard library only; the CPU (--device cpu).
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

INFER = None
IMAGES = 300
REPEATS = 12           # the folder and a 4 KB path are given this many times: a run of a few seconds
RUNS = 36              # signalled runs, over the three signals, both readers and both formats
OUTPUT_RUNS = 6        # signalled runs with --output
DEADLINE_S = 2.0       # infer's bound (app/interrupt_posix.cpp: alarm(2))
TEARDOWN_S = 1.0       # process exit and reaping on a loaded machine
PROCESS_TIMEOUT = 60
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def pgm(width, height, rng):
    """A binary PGM of random 8-bit pixels."""
    return b"P5\n%d %d\n255\n" % (width, height) + rng.randbytes(width * height)


def default_signals():
    """In the child before exec: the signals sent here at their default action, as in a terminal.
    infer keeps a signal it was started with ignored (test_3), so a test run from nohup or from a
    shell's background job (SIGHUP, SIGINT ignored) would otherwise test nothing for them."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


class Reader(threading.Thread):
    """Reads a pipe to its end, all at once (fast) or 512 bytes at a time with pauses (slow)."""

    def __init__(self, pipe, slow):
        super().__init__(daemon=True)
        self.pipe, self.slow, self.data = pipe, slow, bytearray()

    def run(self):
        while True:
            chunk = self.pipe.read1(512) if self.slow else self.pipe.read1(1 << 16)
            if not chunk:
                return
            self.data += chunk
            if self.slow:
                time.sleep(0.002)


class Interrupt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="infer-interrupt-")
        seed = int.from_bytes(os.urandom(8), "little")
        print(f"test_interrupt: {IMAGES} random images, seed {seed}, in {cls.tmp}", file=sys.stderr)
        cls.rng = random.Random(seed)
        cls.folder = os.path.join(cls.tmp, "images")
        os.makedirs(cls.folder)
        for k in range(IMAGES):  # long names: lines of several hundred bytes, some past a pipe's atomic 4096
            name = "i" * cls.rng.randint(20, 200) + f"-{k:04d}.pgm"
            with open(os.path.join(cls.folder, name), "wb") as f:
                f.write(pgm(cls.rng.randint(8, 64), cls.rng.randint(8, 64), cls.rng))
        deep = os.path.join(cls.tmp, *(["d" * 200] * 19))  # an image whose path is about 4 KB
        os.makedirs(deep)
        cls.deep = os.path.join(deep, "deep.pgm")
        with open(cls.deep, "wb") as f:
            f.write(pgm(16, 16, cls.rng))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def command(self, json_lines, *extra):
        return [INFER, "--device", "cpu", "--threads", "1", "--top-k", "5", *(["--json"] if json_lines else []),
                *extra, *([self.folder, self.deep] * REPEATS)]

    def assert_whole_lines(self, data, json_lines, what):
        text = data.decode("utf-8", errors="replace")
        self.assertTrue(text == "" or text.endswith("\n"), f"{what}: the output ends mid-line: ...{text[-300:]!r}")
        for number, line in enumerate(text.splitlines(), start=1):
            if json_lines:
                try:
                    record = json.loads(line)
                except ValueError as e:
                    self.fail(f"{what}: line {number} is not a whole JSON object ({e}): {line[:300]!r}")
                self.assertTrue(record.get("top"), f"{what}: line {number} has no classes: {line[:300]!r}")
            else:
                self.assertTrue(line.endswith(" [cpu]"), f"{what}: line {number} is cut: {line[-300:]!r}")
        return text.count("\n")

    def signalled_run(self, sig, delay, json_lines, slow, *extra):
        """Starts a run, sends sig after delay; returns (returncode, seconds from signal to exit, output).
        infer's standard error is kept for the failure message (self.err): an exit that is not the
        signal says why."""
        with tempfile.TemporaryFile() as err:
            return self._signalled_run(err, sig, delay, json_lines, slow, *extra)

    def _signalled_run(self, err, sig, delay, json_lines, slow, *extra):
        proc = subprocess.Popen(self.command(json_lines, *extra), stdout=subprocess.PIPE, stderr=err,
                                preexec_fn=default_signals)
        reader = Reader(proc.stdout, slow)
        reader.start()
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"{signal.Signals(sig).name}: infer still ran {PROCESS_TIMEOUT} s after it")
        took = time.monotonic() - sent
        reader.join(timeout=PROCESS_TIMEOUT)
        proc.stdout.close()
        err.seek(0)
        self.err = err.read()[-6000:].decode("utf-8", errors="replace")
        return proc.returncode, took, bytes(reader.data)

    def test_1_every_signal_at_random_moments_leaves_whole_lines(self):
        landed = finished_first = 0
        lines = 0
        for run in range(RUNS):
            sig = SIGNALS[run % 3]
            json_lines, slow = run % 2 == 0, run % 4 >= 2
            delay = self.rng.uniform(0.0, 1.5 if slow else 0.6)
            what = (f"run {run}: {signal.Signals(sig).name} after {delay:.3f} s, "
                    f"{'--json' if json_lines else 'text'}, {'slow' if slow else 'fast'} reader")
            code, took, data = self.signalled_run(sig, delay, json_lines, slow)
            lines += self.assert_whole_lines(data, json_lines, what)
            if code == 0:  # the run ended before the signal: nothing to check but its lines
                finished_first += 1
                continue
            landed += 1
            self.assertEqual(code, -sig, f"{what}: exit {code}, not the signal; infer's stderr ends:\n{self.err}")
            self.assertLess(took, DEADLINE_S + TEARDOWN_S, f"{what}: exited {took:.2f} s after the signal")
        print(f"test_interrupt: {landed} of {RUNS} signals landed mid-run ({finished_first} runs ended first), "
              f"{lines} whole lines read", file=sys.stderr)
        self.assertGreaterEqual(landed, RUNS * 3 // 4, "too few signals landed mid-run to test anything")

    def test_2_output_file_is_whole_or_absent(self):
        for run in range(OUTPUT_RUNS):
            sig = SIGNALS[run % 3]
            out = os.path.join(self.tmp, f"out-{run}")
            os.makedirs(out)
            delay = self.rng.uniform(0.0, 0.6)
            code, took, _ = self.signalled_run(sig, delay, True, False, "--output", os.path.join(out, "r.jsonl"))
            left = os.listdir(out)
            what = f"--output run {run}: {signal.Signals(sig).name} after {delay:.3f} s"
            if code == 0:
                self.assertEqual(left, ["r.jsonl"], what)
                continue
            self.assertEqual(code, -sig, f"{what}: exit {code}, not the signal; infer's stderr ends:\n{self.err}")
            self.assertLess(took, DEADLINE_S + TEARDOWN_S, f"{what}: exited {took:.2f} s after the signal")
            self.assertEqual(left, [], f"{what}: files left: {left}")

    def test_3_a_signal_ignored_at_start_stays_ignored(self):
        def ignore_hangup():
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

        proc = subprocess.Popen(self.command(True), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                preexec_fn=ignore_hangup)
        reader = Reader(proc.stdout, False)
        reader.start()
        time.sleep(0.2)
        proc.send_signal(signal.SIGHUP)
        code = proc.wait(timeout=PROCESS_TIMEOUT)
        reader.join(timeout=PROCESS_TIMEOUT)
        proc.stdout.close()
        self.assertEqual(code, 0, "SIGHUP, ignored by the parent, stopped the run")
        count = self.assert_whole_lines(bytes(reader.data), True, "nohup run")
        self.assertEqual(count, (IMAGES + 1) * REPEATS)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    INFER = sys.argv.pop(1)
    unittest.main(verbosity=2)
