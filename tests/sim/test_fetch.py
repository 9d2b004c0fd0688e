"""fetch_tile against a loopback HTTP server started by the test; never the internet."""

import functools
import hashlib
import http.server
import threading
import time
import zipfile

import numpy as np
import pytest
from sim_data import PAPER_EXTENT, synthetic_tile, write_hgt

from poam_ros.sim.fetch import FetchError, fetch_tile
from poam_ros.sim.terrain_io import load_terrain


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        """Keep the test output clean."""


class StallingHandler(QuietHandler):
    def do_GET(self) -> None:
        time.sleep(1.0)  # longer than the client waits; it has gone by now


def serve(directory, handler=QuietHandler):
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    return server


@pytest.fixture
def tiles(tmp_path):
    """(served folder, base URL, destination folder) with a loopback server running."""
    served, dest = tmp_path / "served", tmp_path / "dest"
    served.mkdir()
    server = serve(served)
    yield served, f"http://127.0.0.1:{server.server_address[1]}/", dest
    server.shutdown()
    server.server_close()


def test_fetch_plain_hgt(tiles):
    served, base, dest = tiles
    source = write_hgt(served / "N00E000.hgt", synthetic_tile())
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    path = fetch_tile("N00E000", base, dest, sha256=digest)
    assert path == dest / "N00E000.hgt"
    assert path.read_bytes() == source.read_bytes()
    assert load_terrain(path, PAPER_EXTENT).shape == (1201, 1201)
    assert [p.name for p in dest.iterdir()] == ["N00E000.hgt"]


def test_fetch_zipped_hgt(tiles):
    served, base, dest = tiles
    heights = synthetic_tile()
    with zipfile.ZipFile(served / "S12W034.hgt.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("S12W034.hgt", heights.astype(">i2").tobytes())
    path = fetch_tile("S12W034", base, dest)
    np.testing.assert_array_equal(load_terrain(path, PAPER_EXTENT).grid, heights[::-1])


def test_fetch_replaces_an_existing_tile(tiles):
    served, base, dest = tiles
    write_hgt(served / "N00E000.hgt", synthetic_tile())
    dest.mkdir()
    (dest / "N00E000.hgt").write_bytes(b"stale")
    assert fetch_tile("N00E000", base, dest).stat().st_size == 1201 * 1201 * 2


def test_missing_tile_is_a_404(tiles):
    _, base, dest = tiles
    with pytest.raises(FetchError, match=r"N01E001 not found \(HTTP 404\) at .*N01E001.hgt "
                                         r"or .*N01E001.hgt.zip"):
        fetch_tile("N01E001", base, dest)


def test_corrupt_zip(tiles):
    served, base, dest = tiles
    (served / "N00E000.hgt.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(FetchError, match=r"N00E000.hgt.zip: not a valid zip archive"):
        fetch_tile("N00E000", base, dest)
    assert not dest.exists() or not any(dest.iterdir())


def test_zip_without_a_tile(tiles):
    served, base, dest = tiles
    with zipfile.ZipFile(served / "N00E000.hgt.zip", "w") as archive:
        archive.writestr("readme.txt", "no tile here")
    with pytest.raises(FetchError, match=r"expected one .hgt in the archive, found none"):
        fetch_tile("N00E000", base, dest)


def test_checksum_mismatch_writes_nothing(tiles):
    served, base, dest = tiles
    write_hgt(served / "N00E000.hgt", synthetic_tile())
    with pytest.raises(FetchError, match="sha256 .* does not match the expected 00ff"):
        fetch_tile("N00E000", base, dest, sha256="00ff")
    assert not (dest / "N00E000.hgt").exists()


def test_wrong_size_is_refused(tiles):
    served, base, dest = tiles
    write_hgt(served / "N00E000.hgt", np.zeros((10, 10)))
    with pytest.raises(FetchError, match=r"200 bytes is not an SRTM tile \(expected "
                                         r"2884802 or 25934402 bytes\)"):
        fetch_tile("N00E000", base, dest)


def test_bad_tile_name(tmp_path):
    with pytest.raises(FetchError, match=r"tile name '../etc' is not of the form N17E073"):
        fetch_tile("../etc", "http://127.0.0.1:9", tmp_path)


def test_timeout(tmp_path):
    server = serve(tmp_path, StallingHandler)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(FetchError, match=r"N00E000.hgt: timed out after 0.2 s"):
            fetch_tile("N00E000", base, tmp_path / "dest", timeout=0.2)
    finally:
        server.shutdown()
        server.server_close()
