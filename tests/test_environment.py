"""environment.yml (conda/Binder), pyproject.toml, the lock file and the Makefile agree."""

from __future__ import annotations

import re

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tools.nbtools import ROOT


def _pyproject() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + project["optional-dependencies"]["dev"]
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs}


def _environment_pip() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return [r for r in pip if not r.startswith("-")]


def _makefile_torch() -> Version:
    match = re.search(r"^TORCH_VERSION\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert match, "Makefile defines no TORCH_VERSION"
    return Version(match.group(1))


def test_environment_lists_exactly_the_pyproject_dependencies():
    env = {canonicalize_name(Requirement(r).name): Requirement(r) for r in _environment_pip()}
    project = _pyproject()
    assert set(env) == set(project), (
        f"only in environment.yml: {sorted(set(env) - set(project))}; "
        f"only in pyproject.toml: {sorted(set(project) - set(env))}")
    for name, req in project.items():
        if name == "torch":
            continue  # pinned exactly in environment.yml, a range in pyproject
        assert env[name].specifier == req.specifier, f"{name}: {env[name]} vs {req}"


def test_torch_pin_is_the_same_everywhere_and_allowed():
    torch_env = Requirement(next(r for r in _environment_pip() if r.startswith("torch")))
    pinned = _makefile_torch()
    assert str(torch_env.specifier) == f"=={pinned}"
    assert pinned in _pyproject()["torch"].specifier


def test_lock_file_satisfies_pyproject():
    locked = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            locked[canonicalize_name(name)] = Version(version)
    for name, req in _pyproject().items():
        if name == "torch":
            continue
        assert name in locked, f"{name} is not in requirements-lock.txt; run `make lock`"
        assert locked[name] in req.specifier, f"{name}=={locked[name]} violates {req}"


def test_no_jupyterlab_3_extension_and_no_user_wide_kernel():
    """jupyterlab-mathjax3 targets JupyterLab 3 (Lab 4 reports it unsatisfied); a kernel
    registered with --user would point every clone on the machine at the last one set up,
    and a second named kernel would sit beside the notebooks' python3 as a look-alike."""
    lock = (ROOT / "requirements-lock.txt").read_text().lower()
    assert "jupyterlab-mathjax3" not in lock and "jupyterlab_mathjax3" not in lock
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "ipykernel install" in line]
    assert not installs, f"make setup must not register a second kernel: {installs}"
