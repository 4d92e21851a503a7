"""The course's JupyterLab (``jupyter-config/``, installed into ``.venv`` by ``make setup`` and
into Binder's environment by ``binder/postBuild``): the file browser shows each notebook once
(no jupytext twins, no ``labs/solutions/``), and no news prompt greets a student."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from tools import nbtools
from tools.nbtools import ROOT

CONFIG = ROOT / "jupyter-config"
SERVER_CONFIG = CONFIG / "etc" / "jupyter" / "jupyter_server_config.json"
SETTINGS_DIR = CONFIG / "share" / "jupyter" / "lab" / "settings"
OVERRIDES = SETTINGS_DIR / "overrides.d" / "lmcourse.json"
NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def _contents_manager():
    """jupyter_server's ContentsManager configured from the committed file, as the server
    configures it (``should_list`` applies ``hide_globs`` to names with fnmatch)."""
    from jupyter_server.services.contents.manager import ContentsManager
    from traitlets.config import Config

    return ContentsManager(config=Config(json.loads(SERVER_CONFIG.read_text())))


def test_hide_globs_keep_jupyter_servers_defaults():
    from jupyter_server.services.contents.manager import ContentsManager

    defaults = ContentsManager().hide_globs  # the installed jupyter_server's own list
    assert "__pycache__" in defaults
    globs = _contents_manager().hide_globs
    assert set(defaults) <= set(globs), f"lost the defaults {set(defaults) - set(globs)}"


def test_the_file_browser_hides_twins_and_solutions_but_not_the_package():
    cm = _contents_manager()
    twins = [p for d in nbtools.NOTEBOOK_DIRS for p in sorted((ROOT / d).glob("*.py"))]
    assert twins, "no jupytext twins found"
    shown = [p.name for p in twins if cm.should_list(p.name)]
    assert not shown, f"twins listed beside their notebooks: {shown}"
    assert not cm.should_list("solutions")
    notebooks = nbtools.notebooks() + sorted((ROOT / "labs").glob("*.ipynb"))
    assert all(cm.should_list(p.name) for p in notebooks)
    package = [p for p in (ROOT / "lmcourse").rglob("*.py") if "__pycache__" not in p.parts]
    hidden = [str(p.relative_to(ROOT)) for p in package if not cm.should_list(p.name)]
    assert not hidden, f"package modules hidden: {hidden}"
    for name in ("chapters", "labs", "lmcourse", "README.md", "data"):
        assert cm.should_list(name), name


def test_no_news_prompt_and_no_news_fetched():
    overrides = json.loads(OVERRIDES.read_text())
    assert overrides[NOTIFICATION]["fetchNews"] == "false", (
        "JupyterLab 4 asks 'Would you like to get notified about official Jupyter news?' while "
        "fetchNews is 'none' (its default)")
    schema = Path(sys.prefix, "share", "jupyter", "lab", "schemas",
                  *NOTIFICATION.split(":")).with_suffix(".json")
    if schema.exists():  # the installed JupyterLab knows the setting and that value
        properties = json.loads(schema.read_text())["properties"]
        assert set(overrides[NOTIFICATION]) <= set(properties)
        assert "false" in [c["const"] for c in properties["fetchNews"]["oneOf"]]
    lab = json.loads(SERVER_CONFIG.read_text())["LabApp"]
    assert lab["news_url"] is None


def test_make_setup_installs_the_config_and_one_kernel():
    makefile = (ROOT / "Makefile").read_text()
    for path in (SERVER_CONFIG, OVERRIDES):
        assert f"$(VENV)/{path.relative_to(CONFIG).as_posix()}" in makefile
    assert "ipykernel install" not in makefile, (
        "the notebooks' kernel is `python3`; a second registered kernel looks the same in "
        "the launcher")
    assert "rm -rf $(VENV)/share/jupyter/kernels/lmcourse" in makefile


@pytest.mark.slow
def test_a_real_server_lists_each_notebook_once(tmp_path):
    """Start JupyterLab headless with the committed config, list folders through its REST API,
    read the notification settings JupyterLab's front end gets, and stop it."""
    from headless import jupyter_lab

    token = "lmcourse-test"
    with jupyter_lab(ROOT, tmp_path, token) as url:
        def get(path: str) -> dict:
            req = urllib.request.Request(f"{url}{path}",
                                         headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())

        def listing(folder: str) -> list[str]:
            return sorted(c["name"] for c in get(f"/api/contents/{folder}?content=1")["content"])

        assert listing("labs") == sorted(p.name for p in (ROOT / "labs").glob("*.ipynb"))
        assert listing("chapters") == sorted(p.name for p in (ROOT / "chapters").glob("*.ipynb"))
        assert "__init__.py" in listing("lmcourse")
        hidden_twin = get("/api/contents/chapters/01_backprop.py?content=0")
        assert hidden_twin["name"] == "01_backprop.py", "a hidden file still opens by its path"
        schema = get(f"/lab/api/settings/{NOTIFICATION}")["schema"]["properties"]
        assert schema["fetchNews"]["default"] == "false"
        assert get("/api/kernelspecs")["default"] == "python3"
