#!/usr/bin/env python3
"""Batch inference on a Ray cluster: every image of a folder classified once by a pool of
infer.Classifier actors, the results written as Parquet (or JSON lines), one row per image.

    python examples/ray/classify_folder.py IMAGES OUT                   # a local Ray, one actor
    python examples/ray/classify_folder.py IMAGES OUT --address auto    # the cluster this node is in

Ray Data reads the files (read_binary_files: a local folder, or s3://, gs://, ... with pyarrow's
file systems), hands them in batches to the actors (map_batches), and writes what they return.
Each actor holds one Classifier, built once: the model loaded, the backend planned and one batch's
buffer allocated, then reused for every batch it is given. Where the cluster has GPUs, each actor
asks for one (num_gpus=1) and classifies on it; else on the CPU, with the threads it asks for.

A row is what `infer --json` prints for the image, plus the Ray node that classified it:
    {"file": ..., "device": "cpu", "backend": ..., "top": [{"index", "label", "prob"}, ...],
     "error": null, "node": ...}
and for an image that cannot be classified, "error": "<file>: <problem>" and no "top"; the others
go on. The output folder appears whole or not at all: written under a temporary name beside it,
then renamed. Exit codes, as the infer command's: 0 every image classified, 3 some could not be
(their rows say why), 2 bad usage (OUT exists, IMAGES is not a folder).

Losing a node mid-run is survived the way Ray Data survives it: the tasks and actors that were on
it are retried on the nodes left (an actor pool that may shrink to one), so each image is still
written once. docs/python.md, "Batch inference on a cluster", has what was tested.
"""
import argparse
import os
import shutil
import sys
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.dataset
import pyarrow.json
import ray

import infer

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


def plan_actors(actors=None):
    """(actors, num_gpus, device) for this cluster: one actor per GPU where it has GPUs, else one
    per alive node, unless `actors` says how many."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus:
        return actors or gpus, 1, "gpu"
    return actors or sum(1 for n in ray.nodes() if n["Alive"]), 0, "cpu"


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
                    threads=1, output_format="parquet", blocks=None, **actor_options):
    """Classifies every image file under `images` (infer.image_file_extensions) into `out`, a new
    folder of JSON-lines (or Parquet) files; returns (images, failed). Needs ray.init() first.
    actor_options: more of the actors' Ray options (resources=, label_selector=, ...)."""
    if os.path.lexists(out):
        raise FileExistsError(f"{out}: exists; the results go to a new folder")
    if __name__ != "__main__":  # imported: the actor class travels by value, for workers without this file
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    size, num_gpus, device = plan_actors(actors)
    extensions = [e.lstrip(".") for e in infer.image_file_extensions()]
    ds = ray.data.read_binary_files(images, include_paths=True, file_extensions=extensions,
                                    override_num_blocks=blocks)
    rows = ds.map_batches(
        ClassifyImages,
        fn_constructor_kwargs=dict(model=model, device=device, precision=precision, top_k=top_k,
                                   batch_size=batch_size, threads=threads),
        batch_size=batch_size,
        batch_format="numpy",
        # An elastic pool: it may shrink to one actor when a node is lost, and grows back to `size`.
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=size, initial_size=size),
        num_gpus=num_gpus,
        num_cpus=0 if num_gpus else threads,
        **actor_options,
    )
    parent = os.path.dirname(os.path.abspath(out))
    partial = os.path.join(parent, f".{os.path.basename(out)}.partial-{uuid.uuid4().hex[:8]}")
    try:
        # Streamed: rows are written as batches are classified, never all held at once.
        if output_format == "parquet":
            rows.write_parquet(partial)
        else:
            # pandas writes decimals: 15 places keep a float32 exactly down to about 1e-8.
            rows.write_json(partial, double_precision=15)
        # Counted from what was written, on this machine: the rows, and those with an error.
        total, failed = count_rows(partial, output_format)
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
    ray.init(address=a.address, log_to_driver=False)
    try:
        total, failed = classify_folder(a.images, a.out, model=a.model, actors=a.actors, batch_size=a.batch_size,
                                        top_k=a.top_k, precision=a.precision, threads=a.threads,
                                        output_format=a.format)
    except infer.Error as e:  # the model, the GPU: every actor would fail the same way
        print(f"classify_folder: {e}", file=sys.stderr)
        return 3 if isinstance(e, infer.InputError) else 4
    finally:
        ray.shutdown()
    print(f"{a.out}: {total} images, {total - failed} classified, {failed} could not be", file=sys.stderr)
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
