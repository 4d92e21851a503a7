"""Binder (repo2docker) builds binder/: the same environment as environment.yml, with the
course package installed by postBuild (repo2docker installs the environment file before
it copies the repository, so `-e .` cannot be in it)."""

from __future__ import annotations

import os

import yaml

from tools.nbtools import ROOT

BINDER = ROOT / "binder"


def _env(path):
    return yaml.safe_load(path.read_text())


def test_binder_environment_is_environment_yml_without_the_editable_install():
    root, binder = _env(ROOT / "environment.yml"), _env(BINDER / "environment.yml")
    pip_root = next(d["pip"] for d in root["dependencies"] if isinstance(d, dict))
    pip_binder = next(d["pip"] for d in binder["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip_root, "conda users get the course package from environment.yml"
    assert "-e ." not in pip_binder, "repo2docker cannot install `-e .` from the env file"
    assert pip_binder == [r for r in pip_root if r != "-e ."]
    assert [d for d in binder["dependencies"] if not isinstance(d, dict)] == [
        d for d in root["dependencies"] if not isinstance(d, dict)]
    assert binder["channels"] == root["channels"]


def test_binder_pins_one_python_and_installs_the_package_after_the_build():
    deps = _env(BINDER / "environment.yml")["dependencies"]
    python = [d for d in deps if isinstance(d, str) and d.startswith("python")]
    assert len(python) == 1 and python[0].startswith("python="), (
        "repo2docker reads an exact python=X.Y from the environment file")
    post = BINDER / "postBuild"
    assert os.access(post, os.X_OK), "binder/postBuild must be executable"
    assert "pip install --no-deps -e ." in post.read_text()


def test_binder_installs_the_course_jupyterlab_settings(tmp_path):
    """postBuild copies the same jupyter-config/ files as `make setup`, into the environment's
    prefix where Binder's JupyterLab reads them (run here against a fake prefix)."""
    import shutil
    import subprocess

    from test_jupyter_config import OVERRIDES, SERVER_CONFIG

    text = (BINDER / "postBuild").read_text()
    for path in (SERVER_CONFIG, OVERRIDES):
        assert path.relative_to(ROOT / "jupyter-config").as_posix() in text
    bash = shutil.which("bash")
    if bash is None:
        return
    # the copying part of postBuild, with `python` answering a temporary prefix
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text(f"#!/bin/sh\necho {tmp_path / 'prefix'}\n")
    (fake / "python").chmod(0o755)
    script = text[text.index('prefix="$('):]
    subprocess.run([bash, "-euo", "pipefail", "-c", script], cwd=ROOT, check=True,
                   env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    for path in (SERVER_CONFIG, OVERRIDES):
        installed = tmp_path / "prefix" / path.relative_to(ROOT / "jupyter-config")
        assert installed.read_text() == path.read_text()
