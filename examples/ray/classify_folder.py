#!/usr/bin/env python3
"""Batch inference on a Ray cluster: every image of a folder classified once by a pool of
infer.Classifier actors, the results written as Parquet (or JSON lines), one row per image.

    python examples/ray/classify_folder.py IMAGES OUT                   # a local Ray
    python examples/ray/classify_folder.py IMAGES OUT --address auto    # the cluster this node is in

The files are the ones `infer IMAGES` reads: the folder's own entries (not its subfolders') with
an image's extension, in any case (infer.image_file_extensions). The driver lists them and loads
the model once, on the CPU, to check it before Ray starts; an entry that is not a regular file (a
FIFO, a device, a broken link) or is large gets its row from the driver, which the library's
reader refuses before reading, rather than being read by Ray. Ray Data reads the others
(read_binary_files), hands them in batches to the actors (map_batches), and writes what they
return. A URI (s3://, gs://, ...) is listed by Ray instead, by its rules (recursive, hidden names
skipped). On a cluster of several machines, IMAGES and OUT must be storage every node sees at the
same path (NFS, or a URI), as Ray Data requires; the driver counts the rows written and fails if
any is missing.

Each actor holds one Classifier, built once (the model loaded, the backend planned, one batch's
buffer allocated) and reused for every batch. Where the cluster has GPUs, each actor asks for one
(num_gpus=1) and classifies on it; else on the CPU, with --threads CPUs, one actor per node that
has a CPU more for the reads and writes.

A row is what `infer --json` prints for the image, plus the Ray node that classified it:
    {"file": ..., "device": "cpu", "backend": ..., "top": [{"index", "label", "prob"}, ...],
     "error": null, "node": ...}
and for an image that cannot be classified, "error": "<file>: <problem>" and no "top"; the others
go on. The output folder appears whole or not at all: written under a temporary name beside it,
then renamed. Exit codes, as the infer command's: 0 every image classified; 3 some could not be
(their rows say why), or no images, or a model that cannot be loaded; 2 bad usage (OUT exists,
IMAGES is not a folder, --threads that leave a node no CPU); 4 the GPU; 1 anything else (Ray's
errors), with one line saying what.

Losing a node mid-run is survived the way Ray Data survives it: the tasks and actors that were on
it are retried on the nodes left (the actor pool may shrink to one), so each image is still
written once. docs/python.md, "Batch inference on a cluster", has what was tested.
"""
import argparse
import os
import shutil
import stat
import sys
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.dataset
import pyarrow.json
import ray

import infer

# Files larger than this are checked on the driver before Ray reads them (the library's reader
# refuses an image file over its limit, 256 MiB, before reading it).
LARGE_FILE_BYTES = 64 << 20

# One row per image, as `infer --json` prints it, and the node that classified it.
PREDICTION = pa.struct([("index", pa.int32()), ("label", pa.string()), ("prob", pa.float32())])
SCHEMA = pa.schema([
    ("file", pa.string()),
    ("device", pa.string()),
    ("backend", pa.string()),
    ("top", pa.list_(PREDICTION)),
    ("error", pa.string()),
    ("node", pa.string()),
])


class NoImagesError(Exception):
    """A folder with no image files in it."""


class ClassifyImages:
    """A Ray Data actor: one Classifier for every batch of {"path", "bytes"} rows it is given."""

    def __init__(self, model, device, precision, top_k, batch_size, threads):
        self.classifier = infer.Classifier(model, device=device, precision=precision, max_batch=batch_size,
                                           threads=threads)
        self.top_k = top_k
        self.samples = np.empty((batch_size,) + self.classifier.input_shape, np.float32)  # one batch, once
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch):
        files = [str(p) for p in batch["path"]]
        if len(files) > len(self.samples):
            raise ValueError(f"a batch of {len(files)} rows; the actor was made for {len(self.samples)}")
        errors = [None] * len(files)
        decoded = []  # the row of each sample in self.samples
        for row, (name, image) in enumerate(zip(files, batch["bytes"])):
            try:
                self.classifier.preprocess(image, out=self.samples[len(decoded)], name=name)
                decoded.append(row)
            except infer.InputError as e:  # this image's row says why; the others go on
                errors[row] = str(e)
        top = [None] * len(files)
        if decoded:
            found = self.classifier.classify(self.samples[:len(decoded)], top_k=self.top_k)
            for row, predictions in zip(decoded, found):
                top[row] = [{"index": p.index, "label": p.label, "prob": p.score} for p in predictions]
        ok = [e is None for e in errors]
        return pa.table({
            "file": files,
            "device": [self.classifier.device if k else None for k in ok],
            "backend": [self.classifier.backend if k else None for k in ok],
            "top": top,
            "error": errors,
            "node": [self.node] * len(files),
        }, schema=SCHEMA)


def plan_actors(actors, threads):
    """(actors, num_gpus, device) for this cluster: one actor per GPU where it has GPUs, else one
    per alive node that has a CPU for the actor's threads and one more for reading and writing,
    unless `actors` says how many. Raises ValueError where no node has that many CPUs."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus:
        return actors or gpus, 1, "gpu"
    cpus = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]]
    fit = sum(1 for c in cpus if c >= threads + 1)
    if not fit:
        raise ValueError(f"--threads {threads}: an actor takes {threads} CPUs and its node one more for reading "
                         f"and writing; the largest node has {max(cpus, default=0):g}")
    return actors or fit, 0, "cpu"


def list_images(folder, checker):
    """The image files of `folder` as `infer FOLDER` takes them (sorted), and the rows of those
    that Ray should not read: not regular files, or large, which `checker` refuses as the command
    does (its reader refuses them before reading), in SCHEMA's form. Large files it accepts are
    read by Ray like the others."""
    known = set(infer.image_file_extensions())
    paths, refused = [], []
    with os.scandir(folder) as entries:
        for e in entries:
            if e.is_dir() or os.path.splitext(e.name)[1].lower() not in known:
                continue
            try:
                st = os.stat(e.path)
                ordinary = stat.S_ISREG(st.st_mode) and st.st_size <= LARGE_FILE_BYTES
            except OSError:
                ordinary = False
            if not ordinary:
                try:
                    checker.preprocess(e.path)
                except infer.InputError as error:
                    refused.append((error.file, str(error)))
                    continue
            paths.append(e.path)
    paths.sort()
    rows = {"file": [file for file, _ in refused], "error": [message for _, message in refused]}
    for column in ("device", "backend", "top", "node"):
        rows[column] = [None] * len(refused)
    return paths, pa.table(rows, schema=SCHEMA)


def count_rows(folder, output_format):
    """(rows, rows with an error) in the files written to `folder`, read here: only the error column."""
    only_errors = pa.schema([("error", pa.string())])
    if output_format == "parquet":
        written = pyarrow.dataset.dataset(folder, format="parquet", schema=only_errors)
    else:
        json = pyarrow.dataset.JsonFileFormat(parse_options=pyarrow.json.ParseOptions(
            explicit_schema=only_errors, unexpected_field_behavior="ignore"))
        written = pyarrow.dataset.dataset(folder, format=json, schema=only_errors)
    return written.count_rows(), written.count_rows(filter=pyarrow.dataset.field("error").is_valid())


def classify_folder(images, out, *, model=None, actors=None, batch_size=64, top_k=3, precision="fp32",
                    threads=1, output_format="parquet", **actor_options):
    """Classifies the image files of `images` (a folder, or a URI) into `out`, a new folder of
    Parquet (or JSON-lines) files; returns (images, failed). Needs ray.init() first. Raises
    FileExistsError, NoImagesError, ValueError (options), infer.InputError (the model), RuntimeError
    (rows missing from `out`). actor_options: more of the actors' Ray options (resources=, ...)."""
    if os.path.lexists(out):
        raise FileExistsError(f"{out}: exists; the results go to a new folder")
    if __name__ != "__main__":  # imported: the actor class travels by value, for workers without this file
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    size, num_gpus, device = plan_actors(actors, threads)
    checker = infer.Classifier(model, device="cpu", max_batch=1, verify=False)  # the model, checked once here
    refused, expected = None, None
    if "://" in images:
        extensions = [e.lstrip(".") for e in infer.image_file_extensions()]
        ds = ray.data.read_binary_files(images, include_paths=True, file_extensions=extensions)
    else:
        paths, refused = list_images(images, checker)
        expected = len(paths) + refused.num_rows
        if not expected:
            looked_for = " ".join(infer.image_file_extensions())
            raise NoImagesError(f"{images}: directory contains no images (looked for {looked_for})")
        ds = ray.data.read_binary_files(paths, include_paths=True) if paths else None
    del checker
    rows = None
    if ds is not None:
        rows = ds.map_batches(
            ClassifyImages,
            fn_constructor_kwargs=dict(model=model, device=device, precision=precision, top_k=top_k,
                                       batch_size=batch_size, threads=threads),
            batch_size=batch_size,
            batch_format="numpy",
            # An elastic pool: when a node is lost, its actor's batches go to the others.
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=size, initial_size=size),
            num_gpus=num_gpus,
            num_cpus=0 if num_gpus else threads,
            **actor_options,
        )
    if refused is not None and refused.num_rows:
        refused_rows = ray.data.from_arrow(refused)
        rows = refused_rows if rows is None else rows.union(refused_rows)
    parent = os.path.dirname(os.path.abspath(out))
    partial = os.path.join(parent, f".{os.path.basename(out)}.partial-{uuid.uuid4().hex[:8]}")
    try:
        # Streamed: rows are written as batches are classified, never all held at once.
        if output_format == "parquet":
            rows.write_parquet(partial)
        else:
            # pandas writes decimals, 15 places, to within one unit of the last: a float32 score
            # is recoverable exactly down to about 1e-6.
            rows.write_json(partial, double_precision=15)
        # Counted from what was written, on this machine: the rows, and those with an error.
        total, failed = count_rows(partial, output_format)
        if expected is not None and total != expected:
            raise RuntimeError(f"{out}: {total} rows where {expected} images were listed; on a cluster of several "
                               "machines, IMAGES and OUT must be storage every node sees at the same path")
        os.rename(partial, out)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return total, failed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("images", help="a folder of images (or a URI pyarrow reads: s3://..., gs://...)")
    p.add_argument("out", help="a new folder for the results")
    p.add_argument("--address", help="the Ray cluster to join ('auto': this node's); default: a local Ray")
    p.add_argument("--model", help="a model TOML or ONNX file, on every node (default: the shipped model)")
    p.add_argument("--actors", type=int, help="Classifier actors (default: one per GPU, else one per node)")
    p.add_argument("--batch-size", type=int, default=64, help="images per batch, per actor (default 64)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per actor on the CPU (default 1)")
    p.add_argument("--top-k", type=int, default=3)
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16"])
    p.add_argument("--format", default="parquet", choices=["parquet", "json"],
                   help="Parquet (default: float32 scores exactly), or JSON lines (scores to 15 decimal places)")
    a = p.parse_args(argv)
    if "://" not in a.images and not os.path.isdir(a.images):
        print(f"{a.images}: not a folder", file=sys.stderr)
        return 2
    if os.path.lexists(a.out):
        print(f"{a.out}: exists; the results go to a new folder", file=sys.stderr)
        return 2
    ray.init(address=a.address, log_to_driver=False, logging_level="WARNING")
    try:
        total, failed = classify_folder(a.images, a.out, model=a.model, actors=a.actors, batch_size=a.batch_size,
                                        top_k=a.top_k, precision=a.precision, threads=a.threads,
                                        output_format=a.format)
    except (infer.InputError, infer.OptionError) as e:  # the model, or an option the model cannot take
        print(f"classify_folder: {e}", file=sys.stderr)
        return 3 if isinstance(e, infer.InputError) else 2
    except infer.Error as e:  # the GPU
        print(f"classify_folder: {e}", file=sys.stderr)
        return 4
    except NoImagesError as e:
        print(f"classify_folder: {e}", file=sys.stderr)
        return 3
    except ValueError as e:  # options this cluster cannot run
        print(f"classify_folder: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # Ray's own errors, or rows missing: one line, not a traceback
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"classify_folder: {type(e).__name__}: {first}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    print(f"{a.out}: {total} images, {total - failed} classified, {failed} could not be", file=sys.stderr)
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
