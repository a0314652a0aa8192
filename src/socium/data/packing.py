"""A data set's fetched files packed into one tarball, byte-identical on every fetch (Twitter15, CED).

Why byte-identical: the tarball is what code reads and what a second fetch checks (:func:`pack_ok`),
so fixed mtimes, modes and owner, GNU format and the gzip header's file name make the same files give
the same bytes on every machine.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from socium.data.fetch_file import file_mode
from socium.data.registry import DataSet

_TAR_MTIME = 1651881600  # 2022-05-07, the Twitter15 commit's date: the packed tarball is the same on every fetch


def pack_ok(ds: DataSet, root: Path) -> bool:
    """Whether ``ds``'s tarball is there and every registered member has its pinned sha256."""
    if ds.pack is None or not (root / ds.pack).is_file():
        return False
    want = {Path(f.dest).relative_to(ds.pack_root or "").as_posix(): f.sha256 for f in ds.files}
    try:
        with tarfile.open(root / ds.pack, "r:gz") as tf:
            for m in tf:
                if m.name in want and m.isfile():
                    fh = tf.extractfile(m)
                    if fh is None or hashlib.sha256(fh.read()).hexdigest() != want.pop(m.name):
                        return False
    except (OSError, tarfile.TarError, EOFError):
        return False
    return not want


def pack(ds: DataSet, root: Path) -> None:
    """Pack the fetched files into ``ds.pack`` in registry order (temporary name, then rename).

    The same bytes on every fetch: fixed mtimes, modes and owner, GNU format, and the gzip header's file
    name set to the tarball's own (gzip otherwise records the temporary file's random name).
    """
    assert ds.pack is not None and ds.pack_root is not None
    base, out = root / ds.pack_root, root / ds.pack
    dirs: set[str] = set()
    with tempfile.NamedTemporaryFile(dir=out.parent, delete=False, prefix=".part-") as raw:
        try:
            with (
                gzip.GzipFile(filename=out.name, fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz,
                tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tf,
            ):
                for f in ds.files:
                    rel = Path(f.dest).relative_to(ds.pack_root)
                    for parent in reversed(rel.parents[:-1]):
                        if parent.as_posix() not in dirs:
                            dirs.add(parent.as_posix())
                            info = tarfile.TarInfo(parent.as_posix())
                            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, _TAR_MTIME
                            tf.addfile(info)
                    data = (base / rel).read_bytes()
                    info = tarfile.TarInfo(rel.as_posix())
                    info.size, info.mode, info.mtime = len(data), 0o644, _TAR_MTIME
                    tf.addfile(info, io.BytesIO(data))
        except BaseException:
            os.unlink(raw.name)
            raise
    os.chmod(raw.name, file_mode())
    os.replace(raw.name, out)
    shutil.rmtree(base)
