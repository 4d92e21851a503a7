"""Headless Chromium for the site and slide tests: a local HTTP server and a browser that
records every host a page asks for (and refuses all but 127.0.0.1).

Chromium is the Debian package (``apt-get install chromium``; ``make browser`` installs it
when run as root), driven by Playwright for Python with that executable: Playwright's own
browser download is not needed. Without Chromium or Playwright the tests are skipped with a
message saying how to install them.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

JUPYTER_CONFIG = Path(__file__).resolve().parents[1] / "jupyter-config"
CHROMIUM = Path(os.environ.get("LMCOURSE_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL = "127.0.0.1"


def chromium_path() -> Path:
    """The Chromium executable, or skip the test with the way to install it."""
    path = CHROMIUM if CHROMIUM.exists() else Path(shutil.which("chromium") or CHROMIUM)
    if not path.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install it with `apt-get install -y chromium` "
                    "(as root, `make browser` does it) or set LMCOURSE_CHROMIUM")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("Playwright for Python is missing: `pip install playwright` (make setup)")
    return path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer((LOCAL, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOCAL}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class Browser:
    """One Chromium for a test module; ``page()`` opens a tab that logs hosts and JS errors."""

    def __init__(self):
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=str(chromium_path()), args=ARGS)
        self.hosts: list[str] = []  # every host any page requested, in order
        self.errors: list[str] = []  # uncaught JavaScript errors
        self.failed: list[str] = []  # requests that got no answer or an HTTP error

    def page(self, width: int = 1280, height: int = 900):
        page = self._browser.new_page(viewport={"width": width, "height": height})

        def route(route):
            host = urlsplit(route.request.url).hostname
            self.hosts.append(host)
            if host == LOCAL:
                route.continue_()
            else:
                route.abort()

        page.route("**/*", route)
        page.on("pageerror", lambda err: self.errors.append(f"{err}\n{err.stack or ''}"))
        page.on("requestfailed", lambda req: self.failed.append(req.url))
        page.on("response", lambda resp: resp.status >= 400 and self.failed.append(
            f"{resp.status} {resp.url}"))
        return page

    def remote_hosts(self) -> set[str]:
        return {h for h in self.hosts if h and h != LOCAL}

    def close(self):
        self._browser.close()
        self._playwright.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOCAL, 0))
        return s.getsockname()[1]


@contextmanager
def jupyter_lab(root_dir: Path, runtime_dir: Path, token: str = "lmcourse-test",
                extra_args: tuple[str, ...] = (), env: dict | None = None) -> Iterator[str]:
    """JupyterLab with the course's committed config (``jupyter-config/``) serving
    ``root_dir`` on a free local port, started from ``runtime_dir``; yields its base URL once
    it answers (fails the test after 60 s or when it exits) and stops it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
           f"--config={JUPYTER_CONFIG / 'etc' / 'jupyter' / 'jupyter_server_config.json'}",
           f"--LabApp.app_settings_dir={JUPYTER_CONFIG / 'share' / 'jupyter' / 'lab' / 'settings'}",
           *extra_args]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime_dir), **(env or {})}
    server = subprocess.Popen(cmd, cwd=runtime_dir, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    url = f"http://{LOCAL}:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"jupyter lab exited: {server.stderr.read()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail("jupyter lab did not answer within 60 s")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
