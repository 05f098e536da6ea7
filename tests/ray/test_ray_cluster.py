"""Batch inference on Ray (examples/ray/classify_folder.py) on a 3-node local cluster
(ray.cluster_utils.Cluster: a head and two worker nodes, each its own raylet and object store, on
this machine, as Ray's own multi-node tests run): a few thousand images, fresh each run, with two
that cannot be decoded among them, classified while one worker node is removed mid-run.

Checked: every image has exactly one row; the rows agree with the infer command on the same files;
more than one node classified; the node removed held one of the pool's actors and went away before
the pipeline finished. Run by tools/ci/check-ray.sh (CI), with PYTHONPATH=<build>/python and
INFER_BUILD_DIR=<build>, under a time limit; it never skips.

Agreement is exact, with no tolerance: on one thread, the library's CPU backend gives an image, in
any pass, either the float32 scores it has in a pass of 64 or those it has alone (it runs a pass in
chunks of 16 samples, and a chunk of one image takes other oneDNN kernels, whose sums round
otherwise; test_an_image_has_one_of_two_results_in_any_pass checks this). So each row must equal,
bit for bit, the command's row at --batch 64 or at --batch 1, both run with --threads 1 as the
actors are; the command's passes of 64 hold no chunk of one (3000 % 64 = 56, 200 % 64 = 8).
"""
import collections
import glob
import gzip
import io
import json
import logging
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

# Every node and the driver on the loopback address only (a test binds to 127.0.0.1): Ray's switch
# for a one-machine cluster, read when ray is imported. node_ip_address (NODE) alone is not enough:
# the cluster's own clients would still dial the machine's address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray  # noqa: E402
from PIL import Image  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import infer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "ray"))
import classify_folder as example  # noqa: E402

BUILD = os.environ.get("INFER_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
INFER = os.path.join(BUILD, "bin", "infer")
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
IMAGES = 3000  # decoded by the command in passes of 64, the last of 56: no chunk of one image
# Each node: two CPUs (an actor's and the reads' and writes'), and one "classifier" slot, which each
# actor takes: one actor per node, so the node removed held one.
NODE = dict(num_cpus=2, object_store_memory=100 * 1024 * 1024, resources={"classifier": 1}, node_ip_address="127.0.0.1")


def fashion_images():
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        return np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)


def write_images(folder, rng):
    """IMAGES Fashion-MNIST test images, a fresh random choice, as PNG; and two that are not images."""
    pool = fashion_images()
    for i in rng.choice(len(pool), IMAGES, replace=False):
        Image.fromarray(pool[i], mode="L").save(os.path.join(folder, f"t{i:05d}.png"))
    good = os.path.join(folder, sorted(os.listdir(folder))[0])
    with open(good, "rb") as f, open(os.path.join(folder, "truncated.png"), "wb") as out:
        out.write(f.read()[:100])
    with open(os.path.join(folder, "notes.png"), "w") as out:
        out.write("not an image\n")
    return IMAGES + 2


def command_rows(folder, batch):
    """What `infer --json` prints for each file of `folder`, by file: one thread, passes of `batch`."""
    r = subprocess.run([INFER, "--json", "--device", "cpu", "--threads", "1", "--batch", str(batch), folder],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr  # 3: some images could not be classified (the two bad ones)
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    return {row["file"]: row for row in rows}


def summary(row):
    """A row's answer in float32: its error, or its classes with their scores."""
    if row.get("error"):
        return ("error", row["error"])
    return tuple((p["index"], p["label"], np.float32(p["prob"])) for p in row["top"])


def read_rows(out):
    return pq.read_table(out).to_pylist()


def test_an_image_has_one_of_two_results_in_any_pass(rng):
    # The premise of the exact comparison: on one thread, in a pass of any size, each image gets the
    # bits it has in a pass of 64 or those it has alone. (The CPU backend runs a pass in chunks of
    # 16 samples, one oneDNN program per chunk size; a chunk of one image rounds otherwise.)
    clf = infer.Classifier(device="cpu", threads=1, max_batch=64)
    pool = fashion_images()
    x = np.empty((64,) + clf.input_shape, np.float32)
    for row, i in enumerate(rng.choice(len(pool), 64, replace=False)):
        png = io.BytesIO()
        Image.fromarray(pool[i], mode="L").save(png, format="PNG")
        clf.preprocess(png.getvalue(), out=x[row])
    whole = clf.run(x)
    alone = np.concatenate([clf.run(x[i:i + 1]) for i in range(64)])
    for m in range(1, 65):
        for first in (0, 64 - m):
            got = clf.run(x[first:first + m])
            for r in range(m):
                assert (np.array_equal(got[r], whole[first + r]) or np.array_equal(got[r], alone[first + r])), (m, r)


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.fixture
def cluster():
    c = Cluster(initialize_head=True, head_node_args=dict(NODE, include_dashboard=False))
    workers = [c.add_node(**NODE) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False, logging_level=logging.WARNING)
    ray.data.DataContext.get_current().enable_progress_bars = False
    ray.data.DataContext.get_current().print_on_execution_start = False
    try:
        yield c, workers
    finally:
        ray.shutdown()
        c.shutdown()


def actor_nodes():
    """The nodes where the pipeline's Classifier actors are alive (Ray's actor table, from its GCS)."""
    table = ray._private.state.state.actor_table(None)
    return {a["Address"]["NodeID"] for a in table.values()
            if a["State"] == "ALIVE" and "ClassifyImages" in a["ActorClassName"]}


class NodeRemover(threading.Thread):
    """Removes a worker node that holds one of the actors, as soon as the first results are written."""

    def __init__(self, cluster, victim, out, deadline_s=120):
        super().__init__(daemon=True)
        self.cluster, self.victim, self.out, self.deadline = cluster, victim, out, time.monotonic() + deadline_s
        self.removed_at = None  # time.monotonic() then
        self.error = None
        self.stop = threading.Event()  # the pipeline finished

    def run(self):
        try:
            partial = os.path.join(os.path.dirname(self.out), "." + os.path.basename(self.out) + ".partial-*", "*")
            while time.monotonic() < self.deadline and not self.stop.is_set():
                if glob.glob(partial) and self.victim.node_id in actor_nodes():
                    self.cluster.remove_node(self.victim)
                    self.removed_at = time.monotonic()
                    return
                time.sleep(0.02)
            self.error = (f"no node removed: the pipeline finished first, or wrote nothing within the deadline "
                          f"(actors on {sorted(actor_nodes())}, the node to remove {self.victim.node_id})")
        except Exception as e:  # reported by the test, not lost in the thread
            self.error = repr(e)


def test_each_image_is_classified_once_as_the_command_does_with_a_node_removed_mid_run(cluster, rng, tmp_path):
    c, workers = cluster
    images = tmp_path / "images"
    images.mkdir()
    count = write_images(str(images), rng)
    want = {batch: command_rows(str(images), batch) for batch in (64, 1)}
    assert len(want[64]) == count

    out = str(tmp_path / "rows")
    remover = NodeRemover(c, workers[-1], out)
    remover.start()
    total, failed = example.classify_folder(str(images), out, actors=3, batch_size=64, threads=1,
                                            resources={"classifier": 1})
    finished = time.monotonic()
    remover.stop.set()
    remover.join(timeout=30)
    assert remover.error is None, remover.error
    assert remover.removed_at is not None, "the node remover did not finish"
    assert remover.removed_at < finished  # mid-run
    assert workers[-1].node_id not in {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert (total, failed) == (count, 2)
    assert not glob.glob(str(tmp_path / ".rows.partial-*"))  # the output folder was renamed whole

    rows = read_rows(out)
    seen = collections.Counter(row["file"] for row in rows)
    assert set(seen) == set(want[64]), "files missing or unknown"
    assert [f for f, n in seen.items() if n != 1] == [], "files with more than one row"
    assert len({row["node"] for row in rows}) >= 2, "one node did all the work"
    for row in rows:
        got = summary(row)
        assert got in (summary(want[64][row["file"]]), summary(want[1][row["file"]])), row["file"]
        if not row.get("error"):
            assert row["device"] == "cpu" and row["backend"].startswith("cpu:")


def test_the_program_writes_json_lines_and_exits_as_the_command_does(rng, tmp_path):
    # examples/ray/classify_folder.py as a program, on a Ray of its own: the files the command reads
    # from the folder (infer.image_file_extensions), JSON lines, exit 3 for the
    # image it could not classify; 2, before Ray starts, for a folder that is not one or an output
    # that exists. JSON scores are pandas' decimals, 15 places: within one unit of the 15th place of
    # the float32 score (its writer, ujson's, is not exactly round-to-nearest: 0.9599469900131226
    # is written 0.959946990013122).
    program = os.path.join(HERE, "..", "..", "examples", "ray", "classify_folder.py")
    images = tmp_path / "images"
    images.mkdir()
    pool = fashion_images()
    for n, i in enumerate(rng.choice(len(pool), 200, replace=False)):
        suffix = ".PNG" if n == 0 else ".png"  # the command reads a folder for extensions in any case
        Image.fromarray(pool[i], mode="L").save(images / f"t{i:05d}{suffix}", format="PNG")
    (images / "empty.png").write_bytes(b"")
    (images / "notes.txt").write_text("not an image file by its name: neither reads it\n")
    os.mkfifo(images / "pipe.png")  # read by neither: refused as not a regular file, no hang
    want = {batch: command_rows(str(images), batch) for batch in (64, 1)}
    out = tmp_path / "rows"
    r = subprocess.run([sys.executable, program, str(images), str(out), "--format", "json", "--threads", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr[-3000:]
    assert r.stderr.rstrip().endswith(f"{out}: 202 images, 200 classified, 2 could not be")
    rows = []
    for name in sorted(glob.glob(str(out / "*.json"))):
        with open(name) as f:
            rows += [json.loads(line) for line in f]
    assert sorted(row["file"] for row in rows) == sorted(want[64])
    for row in rows:
        if row["error"]:
            assert row["error"] == want[64][row["file"]]["error"] and row["top"] is None
            continue
        matches = []
        for batch in (64, 1):
            top = want[batch][row["file"]]["top"]
            matches.append([(p["index"], p["label"]) for p in row["top"]] == [(p["index"], p["label"]) for p in top]
                           and all(abs(p["prob"] - q["prob"]) <= 1e-15 for p, q in zip(row["top"], top)))
        assert any(matches), row["file"]
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, code, problem in (
            ([str(images / "empty.png"), str(tmp_path / "x")], 2, "empty.png: not a folder"),
            ([str(images), str(out)], 2, "rows: exists"),
            ([str(empty), str(tmp_path / "y")], 3, "empty: directory contains no images (looked for .png"),
            ([str(images), str(tmp_path / "z"), "--model", str(tmp_path / "none.onnx")], 3, "none.onnx: "),
            ([str(images), str(tmp_path / "w"), "--threads", str(os.cpu_count())], 2, "--threads")):
        r = subprocess.run([sys.executable, program] + argv, capture_output=True, text=True, timeout=120)
        # One line of ours, last (Ray may log before it), and no traceback.
        lines = r.stderr.strip().splitlines()
        assert r.returncode == code and problem in lines[-1] and "Traceback" not in r.stderr, (argv, r.stderr)
        assert not os.path.lexists(argv[1]) or argv[1] == str(out)  # nothing written
