"""infer.check_environment, infer.write_manifest and infer.version against the infer command."""
import json
import subprocess

import pytest

import infer
from conftest import INFER


def test_the_report_is_what_infer_check_reports():
    report = infer.check_environment()
    out = subprocess.run([INFER, "--check", "--json"], capture_output=True, text=True).stdout
    want = json.loads(out)
    got = json.loads(report.to_json())
    assert got["ok"] == want["ok"] == report.ok == bool(report)
    want_items = [i["item"] for i in want["items"]]
    assert [i.item for i in report.items] == want_items == [i["item"] for i in got["items"]]
    for item in report.items:
        assert item.status in ("ok", "warn", "FAIL", "unknown"), item
    if not report.ok:
        failing = report.first_failure.split(":")[0]  # the root cause's item, a row of the table
        assert failing in [i.item for i in report.items if i.status == "FAIL"] and failing in report.table
    assert report.manifest.name == "VERSIONS.toml"


def test_a_manifest_written_here_lists_the_model_and_is_read_back(tmp_path):
    path = tmp_path / "deploy" / "VERSIONS.toml"
    path.parent.mkdir()
    written = infer.write_manifest(str(path))
    assert path.exists() and written.model_problem == ""
    assert {p.name for p in written.model_files} == {"fashion.toml", "fashion.safetensors"}
    report = infer.check_environment(manifest=str(path))
    assert report.manifest == path
    model_rows = [i for i in report.items if i.item.startswith("model:")]
    assert model_rows and all(i.status == "ok" for i in model_rows), model_rows
    assert len(report.manifest_sha256) == 64


def test_an_unreadable_manifest_is_an_input_error(tmp_path):
    with pytest.raises(infer.InputError) as e:
        infer.check_environment(manifest=str(tmp_path / "nope.toml"))
    assert e.value.file == str(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("schema = [")
    with pytest.raises(infer.InputError):
        infer.check_environment(manifest=str(bad))
    with pytest.raises(infer.InputError):
        infer.write_manifest(str(tmp_path / "no" / "such" / "dir" / "VERSIONS.toml"))


def test_version_is_the_command_s():
    first = subprocess.run([INFER, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    assert first == "infer " + infer.version() == "infer " + infer.__version__
    assert infer.build_info().compiler
