"""Download an SRTM tile for a new survey area.

SRTM tiles are named after their south-west corner (``N47W124``) and served as
``<name>.hgt`` or zipped as ``<name>.hgt.zip``. Mirrors differ (NASA Earthdata needs a
login; several public mirrors do not), so the base URL is the caller's choice::

    from poam_ros.sim.fetch import fetch_tile
    from poam_ros.sim.terrain_io import load_terrain
    path = fetch_tile("N47W124", "https://<mirror>/SRTM1", "~/srtm")
    terrain = load_terrain(path, (-31, 31, -31, 31), shape=(360, 360))

The tile is written atomically (temporary file, then ``os.replace``), so an interrupted
download never leaves a partial ``.hgt`` behind.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path

from poam_ros.sim.terrain_io import HGT_SIDES

log = logging.getLogger(__name__)

TILE_NAME = re.compile(r"[NS]\d{2}[EW]\d{3}")
VALID_HGT_BYTES = {side * side * 2 for side in HGT_SIDES}


class FetchError(RuntimeError):
    """A tile could not be fetched; the message names the URL and the reason."""


def fetch_tile(name: str, base_url: str, dest_dir, *, timeout: float = 60.0,
               sha256: str | None = None) -> Path:
    """Download tile ``name`` from ``base_url`` into ``dest_dir``; return the ``.hgt`` path.

    Tries ``<base_url>/<name>.hgt`` and, if the server answers 404, ``<name>.hgt.zip``,
    unpacking the one ``.hgt`` inside. An existing file of the same name is replaced.

    Args:
        name: tile name such as ``N17E073``.
        base_url: the folder URL that holds the tiles.
        dest_dir: folder to write ``<name>.hgt`` into; created if missing.
        timeout: seconds to wait for the server on each request.
        sha256: expected hex digest of the bytes as downloaded (the archive, for a zip).

    Raises:
        FetchError: bad name, HTTP error, timeout, checksum mismatch, bad zip, wrong size.
    """
    if not TILE_NAME.fullmatch(name):
        raise FetchError(f"tile name {name!r} is not of the form N17E073 ([NS]dd[EW]ddd)")
    base = base_url.rstrip("/")
    hgt_url, zip_url = f"{base}/{name}.hgt", f"{base}/{name}.hgt.zip"
    payload = _download(hgt_url, timeout)
    url = hgt_url
    if payload is None:
        payload, url = _download(zip_url, timeout), zip_url
    if payload is None:
        raise FetchError(f"tile {name} not found (HTTP 404) at {hgt_url} or {zip_url}")
    if sha256 is not None:
        digest = hashlib.sha256(payload).hexdigest()
        if digest != sha256.lower():
            raise FetchError(f"{url}: sha256 {digest} does not match the expected {sha256}")
    tile = _unzipped(payload, url) if url == zip_url else payload
    if len(tile) not in VALID_HGT_BYTES:
        raise FetchError(f"{url}: {len(tile)} bytes is not an SRTM tile (expected "
                         f"{' or '.join(map(str, sorted(VALID_HGT_BYTES)))} bytes)")
    path = Path(dest_dir).expanduser() / f"{name}.hgt"
    _write_atomically(path, tile)
    log.info("fetched %s into %s", url, path)
    return path


def _download(url: str, timeout: float) -> bytes | None:
    """The body at ``url``, or None on HTTP 404."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except TimeoutError as exc:
        raise FetchError(f"{url}: timed out after {timeout:g} s") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise FetchError(f"{url}: timed out after {timeout:g} s") from exc
        raise FetchError(f"{url}: {exc.reason}") from exc


def _unzipped(payload: bytes, url: str) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            members = [m for m in archive.namelist() if m.lower().endswith(".hgt")]
            if len(members) != 1:
                raise FetchError(f"{url}: expected one .hgt in the archive, found "
                                 f"{members or 'none'}")
            return archive.read(members[0])
    except (zipfile.BadZipFile, zlib.error) as exc:
        raise FetchError(f"{url}: not a valid zip archive ({exc})") from exc


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".part")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
