"""Saving and loading a model's whole state to one file, atomically and checked.

The state format, version 2, is the one every method writes: the state is the model's
``OnlineSparseGP.state_dict()`` (the common layout of :mod:`.state`), and a method that keeps
more than the common state adds entries to its ``method_state``
(``OnlineSparseGP._method_state``), never a file format of its own. A change to the layout
below or to :mod:`.state`'s, or to the meaning of a common entry, bumps ``VERSION``.
A file is one ASCII header line, then the payload::

    poam_ros.model_state 2 <payload bytes> sha256:<64 hex digits>\\n
    <payload>

The payload is a torch archive of ``{"method": str, "state": dict}``, the state made of plain
containers (tensors, numbers, strings, lists, dicts), read back with ``weights_only=True`` so
that loading never executes code from the file. The header's checksum is the SHA-256 of the
payload's bytes, verified before anything is unpickled: a flipped or lost byte anywhere in
the payload refuses the file, where the archive alone would serve changed tensor values as a
map. A flip in the header breaks its format name, version, size or checksum, so it is refused
too. Every refusal is one :class:`StateFileError` naming the file and the problem; nothing is
applied then.

Version 1 files (a torch archive with the format, version and method beside the state, no
checksum) cannot be verified and are refused with both version numbers.

Files are written to a temporary beside the target (``.<name>.<8 random characters>.tmp``)
and renamed over it, so a reader never sees half a file; a writer killed before the rename
leaves its temporary, which :func:`remove_stale_temporaries` deletes.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tempfile
from pathlib import Path

import torch

FORMAT = "poam_ros.model_state"
VERSION = 2
_MAGIC = FORMAT.encode("ascii") + b" "
_HEADER_LIMIT = 256  # bytes: a longer first line is no header of this format
_TEMPORARY_SUFFIX = ".tmp"
_ZIP_MAGIC = b"PK\x03\x04"  # how every torch.save archive (and version 1 file) starts


class StateFileError(RuntimeError):
    """A state file is missing, unreadable or not one this version of poam_ros can load."""

    def __init__(self, path, problem: str):
        super().__init__(f"cannot load model state from {path}: {problem}")
        self.path, self.problem = Path(path), problem


def write_state(path, method: str, state: dict) -> Path:
    """Write ``state`` of ``method`` to ``path`` in the format above, via a temporary file
    and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save({"method": method, "state": state}, buffer)
    payload = buffer.getbuffer()
    header = (f"{FORMAT} {VERSION} {len(payload)} "
              f"sha256:{hashlib.sha256(payload).hexdigest()}\n").encode("ascii")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TEMPORARY_SUFFIX,
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(header)
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_header(path) -> dict:
    """The checked contents of a state file: format, version, method and state."""
    path = Path(path)
    if not path.is_file():
        raise StateFileError(path, "no such file")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise StateFileError(path, f"cannot read it ({err.strerror or err})") from None
    try:
        if not data.startswith(_MAGIC):
            raise ValueError(_not_current(data))
        contents = _load_archive(_checked_payload(data))
    except ValueError as err:
        raise StateFileError(path, str(err)) from None
    if (not isinstance(contents, dict) or not isinstance(contents.get("method"), str)
            or not isinstance(contents.get("state"), dict)):
        raise StateFileError(path, "the method or state section is missing")
    return {"format": FORMAT, "version": VERSION, "method": contents["method"],
            "state": contents["state"]}


def read_state(path, method: str) -> dict:
    """Read and check a state file written by :func:`write_state` for ``method``."""
    payload = read_header(path)
    if payload["method"] != method:
        raise StateFileError(path, f"it holds a {payload['method']!r} model, not {method!r}")
    return payload["state"]


def remove_stale_temporaries(path) -> list[Path]:
    """Delete the temporaries that writes of ``path`` killed before their rename left beside
    it; returns those deleted.

    Only names :func:`write_state` gives temporaries of this very ``path`` match (the random
    part has no dot, so no other file's temporary does). Call it before this process saves to
    ``path``: a save in progress in another process would lose its temporary.
    """
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}"
                         rf"{re.escape(_TEMPORARY_SUFFIX)}")
    if not path.parent.is_dir():
        return []
    removed = []
    for entry in path.parent.iterdir():
        if pattern.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return sorted(removed)


def _checked_payload(data: bytes) -> memoryview:
    """The payload of a file that starts with the format's name, once its header is valid and
    the checksum matches; ``ValueError`` saying what is wrong otherwise."""
    end = data.find(b"\n", 0, _HEADER_LIMIT)
    fields = data[:max(end, 0)].split(b" ", 2)
    if len(fields) != 3 or not fields[1].isdigit():
        raise ValueError("the header line is damaged")
    if int(fields[1]) != VERSION:
        raise ValueError(_version_problem(int(fields[1])))
    rest = re.fullmatch(rb"(\d+) sha256:([0-9a-f]{64})", fields[2])
    if rest is None:
        raise ValueError("the header line is damaged")
    size, payload = int(rest[1]), memoryview(data)[end + 1:]
    if len(payload) != size:
        raise ValueError(f"the payload has {len(payload)} bytes where the header says {size}: "
                         f"the file is truncated or damaged")
    if hashlib.sha256(payload).hexdigest().encode("ascii") != rest[2]:
        raise ValueError("the SHA-256 checksum does not match the payload: the file is corrupt")
    return payload


def _not_current(data: bytes) -> str:
    """Why a file without this format's header is refused: an empty file, one of an earlier
    version (a bare torch archive with the format's name inside), another torch file, or no
    torch archive at all."""
    if not data:
        return "the file is empty"
    if not data.startswith(_ZIP_MAGIC):  # torch's legacy pickles are not state files either
        return "not a readable model state file (neither this format's header nor a torch archive)"
    contents = _load_archive(data)
    if not isinstance(contents, dict) or contents.get("format") != FORMAT:
        return "not a poam_ros model state file"
    return _version_problem(contents.get("version"))


def _version_problem(found) -> str:
    old = " (a file without a checksum, which cannot be verified)" if found == 1 else ""
    return f"format version {found} is not the supported version {VERSION}{old}"


def _load_archive(data):
    """``torch.load`` of ``data`` without running code from it; ``ValueError`` when it is no
    readable torch archive."""
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for corrupt or foreign archives
        first_line = (str(err).splitlines() or [""])[0][:200]
        raise ValueError(f"not a readable model state file ({type(err).__name__}: "
                         f"{first_line})") from None
