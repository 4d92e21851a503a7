"""The course installs as a normal package: a non-editable install finds the Goodreads sample."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from lmcourse.data import goodreads

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(root: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(root)], check=True, timeout=300)
    (path,) = out.glob("lmcourse-*.whl")
    return path


def test_the_wheel_ships_the_sample(wheel: Path, root: Path):
    with zipfile.ZipFile(wheel) as z:
        shipped = [n for n in z.namelist() if n.endswith(goodreads.SAMPLE_NAME)]
        assert shipped, "the wheel does not contain the Goodreads sample"
        assert z.read(shipped[0]) == (root / "data" / goodreads.SAMPLE_NAME).read_bytes()


def test_a_non_editable_install_loads_the_sample(wheel: Path, tmp_path: Path):
    """Install the wheel into a fresh venv (dependencies borrowed from this environment
    through a .pth file placed after the venv's own site-packages) and load the sample
    from a directory outside the repository."""
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_course_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    code = ("import lmcourse.data.goodreads as g; p = g.sample_path(); "
            "print(p); print(len(g.load_reviews(p)))")
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    path, count = run.stdout.split()
    assert Path(path).is_relative_to(env), f"found {path}, not the installed copy"
    assert int(count) == len(goodreads.load_reviews(goodreads.sample_path()))


def test_a_missing_sample_says_where_it_looked(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(goodreads, "_sample_candidates", lambda: [tmp_path / "nowhere.gz"])
    with pytest.raises(FileNotFoundError) as info:
        goodreads.sample_path()
    message = str(info.value)
    assert str(tmp_path / "nowhere.gz") in message and goodreads.SAMPLE_ENV in message


def test_the_environment_variable_wins(monkeypatch, tmp_path: Path):
    copy = tmp_path / "mine.jsonl.gz"
    copy.write_bytes(goodreads.sample_path().read_bytes())
    monkeypatch.setenv(goodreads.SAMPLE_ENV, str(copy))
    assert goodreads.sample_path() == copy
    monkeypatch.setenv(goodreads.SAMPLE_ENV, str(tmp_path / "typo.gz"))
    with pytest.raises(FileNotFoundError, match="names no file"):
        goodreads.sample_path()
