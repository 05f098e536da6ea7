#!/usr/bin/env python3
"""The batch Job of deploy/kubernetes (an Indexed Job: pod I of N runs
`infer --shard I/N --output /results/shard-I.jsonl --json /images`), run as N local processes.

    test_shard.py [INFER_EXE] [unittest arguments]       (or INFER_EXE in the environment)

Over a folder of images made afresh with random pixels (its seed is printed):
  - N = 4 concurrent processes classify every image exactly once, each in the shard that FNV-1a 64 of
    its path relative to the folder (UTF-8, '/' separators) picks, mod N;
  - the partition is the same when the folder is given by another path (a copy elsewhere, a
    relative path with a trailing slash), as it is in another pod;
  - a shard killed (SIGKILL) while it classifies leaves no file; rerun, it writes its whole shard,
    and every image is again in exactly one file; a rerun over a finished file replaces it;
  - a shard that gets no image writes an empty file and exits 0 (the Job's index succeeds);
  - a bad I/N is a usage error (exit 2) and writes nothing.
Python's standard library only; runs on the CPU (--device cpu).
"""

import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import unittest
import zlib

INFER = None
N = 4
IMAGES = 4000          # about 1000 a shard: enough for a kill to land while one classifies
PROCESS_TIMEOUT = 120  # seconds for one infer run


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def png(width, height, channels, rng):
    """A PNG of random 8-bit pixels: grayscale (1 channel) or RGB (3)."""
    rows = b"".join(b"\0" + rng.randbytes(width * channels) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0 if channels == 1 else 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


def make_images(folder, count, rng):
    """count random PNGs of 5 to 48 pixels a side in folder, some with names that are not ASCII or
    have spaces; and one file that is not an image, which no shard may report. Returns the names."""
    os.makedirs(folder)
    names = []
    for k in range(count):
        name = (f"é-{k:05d}.png", f"画像 {k:05d}.png", f"img.{k:05d}.PNG")[k % 7] if k % 7 < 3 else f"img-{k:05d}.png"
        with open(os.path.join(folder, name), "wb") as f:
            f.write(png(rng.randint(5, 48), rng.randint(5, 48), rng.choice((1, 3)), rng))
        names.append(name)
    with open(os.path.join(folder, "notes.txt"), "w", encoding="utf-8") as f:
        f.write("not an image\n")
    return names


def shard_command(index, count, output, folder, *extra):
    return [INFER, "--device", "cpu", *extra, "--shard", f"{index}/{count}", "--output", output, "--json", folder]


def run(command, cwd=None):
    return subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=PROCESS_TIMEOUT)


def read_shard(path, folder, cwd=None):
    """The relative paths in one shard file, in its order: each JSON line's "file" relative to the
    folder argument that produced it."""
    base = os.path.join(cwd or os.getcwd(), folder)
    paths = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            record = json.loads(line)
            assert "top" in record and record["top"], f"{path}:{number}: no classes: {line!r}"
            full = os.path.join(cwd or os.getcwd(), record["file"])
            paths.append(os.path.relpath(full, base).replace(os.sep, "/"))
    return paths


class Shards(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="infer-shard-")
        seed = int.from_bytes(os.urandom(8), "little")
        print(f"test_shard: {IMAGES} random images, seed {seed}, in {cls.tmp}", file=sys.stderr)
        cls.folder = os.path.join(cls.tmp, "images")
        cls.names = make_images(cls.folder, IMAGES, random.Random(seed))
        cls.out = os.path.join(cls.tmp, "results")
        os.makedirs(cls.out)
        # The Job's N pods at once, one thread each (this machine has two cores).
        procs = [subprocess.Popen(shard_command(i, N, cls.shard_file(i), cls.folder, "--threads", "1"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(N)]
        cls.first_run = []
        for proc in procs:
            out, err = proc.communicate(timeout=PROCESS_TIMEOUT)
            cls.first_run.append((proc.returncode, out, err))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def shard_file(cls, index, out=None):
        return os.path.join(out or cls.out, f"shard-{index}.jsonl")

    def assert_exactly_once(self, out, folder, cwd=None):
        """Every image in exactly one shard file of out, the one its hash picks; returns the shards'
        sets of relative paths."""
        shards, seen = [], {}
        for i in range(N):
            paths = read_shard(self.shard_file(i, out), folder, cwd)
            self.assertEqual(len(paths), len(set(paths)), f"shard {i} lists an image twice")
            for p in paths:
                self.assertNotIn(p, seen, f"{p} is in shards {seen.get(p)} and {i}")
                seen[p] = i
                self.assertEqual(fnv1a64(p) % N, i, f"{p} is in shard {i}, FNV-1a 64 mod {N} says {fnv1a64(p) % N}")
            shards.append(set(paths))
        self.assertEqual(sorted(seen), sorted(self.names), "the shards together are not the folder's images")
        return shards

    def test_1_every_image_once_across_concurrent_shards(self):
        for i, (code, _, err) in enumerate(self.first_run):
            self.assertEqual(code, 0, f"shard {i}/{N} exited {code}: {err}")
        shards = self.assert_exactly_once(self.out, self.folder)
        for i, paths in enumerate(shards):  # 4000 images: each shard near 1000, never empty
            self.assertGreater(len(paths), IMAGES // N // 2, f"shard {i} has {len(paths)} images")
        leftovers = [f for f in os.listdir(self.out) if f.startswith(".")]
        self.assertEqual(leftovers, [], "temporary files left beside the results")

    def test_2_partition_is_stable_across_paths(self):
        expected = [set(read_shard(self.shard_file(i), self.folder)) for i in range(N)]
        elsewhere = os.path.join(self.tmp, "mounted", "elsewhere")
        shutil.copytree(self.folder, elsewhere)
        for folder, cwd in ((elsewhere, None), ("mounted/elsewhere/", self.tmp)):
            with self.subTest(folder=folder):
                out = tempfile.mkdtemp(dir=self.tmp)
                for i in range(N):
                    result = run(shard_command(i, N, self.shard_file(i, out), folder, "--threads", "1"), cwd=cwd)
                    self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(self.assert_exactly_once(out, folder, cwd), expected)

    def test_3_killed_shard_leaves_no_file_and_its_rerun_completes(self):
        out = tempfile.mkdtemp(dir=self.tmp)
        for i in range(N):
            if i != 2:
                shutil.copy(self.shard_file(i), self.shard_file(i, out))
        victim = self.shard_file(2, out)
        proc = subprocess.Popen(shard_command(2, N, victim, self.folder), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # infer says "infer: shard 2/4: K of M inputs" on stderr as it starts classifying them.
        started = threading.Event()
        lines = []

        def watch():
            for line in proc.stderr:
                lines.append(line)
                if "shard 2/4" in line:
                    started.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        started.wait(timeout=PROCESS_TIMEOUT)  # then at once: its ~1000 images take a few tenths of a second
        self.assertIsNone(proc.poll(), "shard 2 finished before it could be killed: make IMAGES larger\n" + "".join(lines))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=PROCESS_TIMEOUT)
        watcher.join(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        self.assertTrue(started.is_set(), "infer did not say it started shard 2/4; killed after start anyway")
        self.assertFalse(os.path.exists(victim), "a killed shard left its file (a half file)")
        visible = sorted(f for f in os.listdir(out) if not f.startswith("."))
        self.assertEqual(visible, [f"shard-{i}.jsonl" for i in range(N) if i != 2])

        result = run(shard_command(2, N, victim, self.folder, "--threads", "1"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_exactly_once(out, self.folder)

        # A rerun over a finished shard replaces its file: the same images, once.
        before = read_shard(self.shard_file(0, out), self.folder)
        result = run(shard_command(0, N, self.shard_file(0, out), self.folder, "--threads", "1"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(read_shard(self.shard_file(0, out), self.folder), before)
        self.assert_exactly_once(out, self.folder)

    def test_4_a_shard_without_images_writes_an_empty_file(self):
        folder = os.path.join(self.tmp, "one")
        os.makedirs(folder)
        name = self.names[0]
        shutil.copy(os.path.join(self.folder, name), folder)
        out = tempfile.mkdtemp(dir=self.tmp)
        for i in range(N):
            result = run(shard_command(i, N, self.shard_file(i, out), folder))
            self.assertEqual(result.returncode, 0, f"shard {i}/{N} of one image exited {result.returncode}: {result.stderr}")
            paths = read_shard(self.shard_file(i, out), folder)
            self.assertEqual(paths, [name] if fnv1a64(name) % N == i else [], f"shard {i}")

    def test_5_a_bad_shard_is_a_usage_error_and_writes_nothing(self):
        out = tempfile.mkdtemp(dir=self.tmp)
        for shard in ("4/4", "1/0", "-1/4", "x/4", "1/", "/4", "2"):
            with self.subTest(shard=shard):
                target = os.path.join(out, "shard.jsonl")
                result = run([INFER, "--device", "cpu", "--shard", shard, "--output", target, "--json", self.folder])
                self.assertEqual(result.returncode, 2, f"--shard {shard}: exit {result.returncode}: {result.stderr}")
                self.assertEqual(os.listdir(out), [], f"--shard {shard} wrote something")


def main():
    global INFER
    args = sys.argv[1:]
    if args and not args[0].startswith("-"):
        INFER = args.pop(0)
    else:
        INFER = os.environ.get("INFER_EXE")
    if not INFER or not os.access(INFER, os.X_OK):
        sys.exit(f"test_shard: no infer executable (argument or INFER_EXE): {INFER!r}\n" + __doc__)
    INFER = os.path.abspath(INFER)  # some runs are from another folder
    help_text = subprocess.run([INFER, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=60).stdout
    missing = [o for o in ("--shard", "--output") if o not in help_text]
    if missing:
        sys.exit(f"test_shard: {INFER} has no {' or '.join(missing)} (its --help does not list them)")
    unittest.main(argv=[sys.argv[0]] + args, verbosity=2)


if __name__ == "__main__":
    main()
