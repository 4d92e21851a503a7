"""Downloading a file safely: streamed, checksummed, atomic.

Data sets the course can fetch (today the full Goodreads spoiler reviews) come through
:func:`download`. Whatever goes wrong, no half-written or unverified file is left where
the course would read it: the body goes to a temporary file in the destination folder,
its SHA-256 is computed on the way, and only a complete, verified file is renamed into
place with ``os.replace`` (atomic on POSIX and Windows).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["DownloadError", "download", "sha256_file"]


class DownloadError(OSError):
    """A download failed (offline, HTTP error, cut short, checksum mismatch); no file was
    written."""


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _offline_message(url: str, reason: object, offline_hint: str) -> str:
    host = urllib.parse.urlsplit(url).netloc or url
    return (f"could not reach {host} ({reason}): this machine seems to be offline, or the "
            f"server is down. Nothing was written.{' ' + offline_hint if offline_hint else ''}")


def download(url: str, dest: str | os.PathLike, sha256: str | None, *,
             allow_unverified: bool = False, overwrite: bool = False, timeout: float = 60.0,
             progress: bool = True, chunk_size: int = 1 << 20, offline_hint: str = "") -> Path:
    """Download ``url`` to ``dest`` (a file, or a directory: one that exists or a path
    ending in ``/``, created if need be).

    The body is streamed in ``chunk_size`` pieces into a temporary file in the same
    directory, with a ``tqdm`` progress bar, hashed on the way, flushed to disk and only
    then renamed onto ``dest`` (``os.replace`` is atomic): whatever goes wrong (offline,
    an HTTP error, a transfer cut short, a SHA-256 mismatch, Ctrl-C) raises
    :class:`DownloadError` or the interrupt and leaves no file behind.

    The SHA-256 must be given (``sha256=``) unless you opt out explicitly with
    ``allow_unverified=True``, in which case the digest is reported so you can pin it.
    An existing ``dest`` is kept (and verified if ``sha256`` is known) unless
    ``overwrite=True``. ``offline_hint`` is added to the message when the host cannot be
    reached (e.g. what to use instead). Returns the path of the file.
    """
    as_dir = str(dest).endswith(("/", os.sep))
    dest = Path(dest).expanduser()
    if as_dir or dest.is_dir():
        dest = dest / (Path(urllib.parse.urlsplit(url).path).name or "download")
    if sha256 is None and not allow_unverified:
        raise ValueError(
            "no SHA-256 to verify the download against: pass sha256='<64 hex digits>' "
            "(the digest you trust), or allow_unverified=True to download without checking "
            "(the digest is then reported so you can pin it next time)")
    if sha256 is not None:
        sha256 = sha256.strip().lower()
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"sha256 must be 64 hexadecimal digits, got {sha256!r}")
    if dest.exists() and not overwrite:
        if sha256 is not None and sha256_file(dest) != sha256:
            raise DownloadError(f"{dest} exists but its SHA-256 is not {sha256}; delete it or "
                                "pass overwrite=True to download it again")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)

    from tqdm.auto import tqdm

    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                response = urllib.request.urlopen(url, timeout=timeout)  # noqa: S310
            except urllib.error.HTTPError as err:
                raise DownloadError(f"the server answered {err.code} {err.reason} for {url}; "
                                    "nothing was written") from err
            except urllib.error.URLError as err:
                raise DownloadError(_offline_message(url, err.reason, offline_hint)) from err
            except (TimeoutError, ConnectionError) as err:
                raise DownloadError(_offline_message(url, err, offline_hint)) from err
            digest, received = hashlib.sha256(), 0
            expected = _content_length(response)
            with response, tqdm(total=expected, unit="B", unit_scale=True, unit_divisor=1024,
                                desc=dest.name, disable=not progress) as bar:
                try:
                    for block in iter(lambda: response.read(chunk_size), b""):
                        out.write(block)
                        digest.update(block)
                        received += len(block)
                        bar.update(len(block))
                except (OSError, ValueError) as err:  # IncompleteRead, reset, timeout
                    raise DownloadError(f"the transfer from {url} broke off after {received:,} "
                                        f"bytes ({err!r}); nothing was written") from err
            if expected is not None and received != expected:
                raise DownloadError(f"the transfer from {url} broke off: {received:,} of "
                                    f"{expected:,} bytes arrived; nothing was written")
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if sha256 is not None and got != sha256:
            raise DownloadError(f"SHA-256 mismatch for {url}: expected {sha256}, got {got}; "
                                "the file is damaged or has changed; nothing was written")
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if sha256 is None:
        print(f"downloaded {dest} ({received:,} bytes) WITHOUT a checksum to verify; its "
              f"SHA-256 is {got}: pass sha256='{got}' from now on")
    return dest


def _content_length(response: Any) -> int | None:
    value = response.headers.get("Content-Length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
