"""Files the agent names: checked before any work, read with bounds, written where others can read.

One implementation for every command of biotool and molperceive, so that a FIFO, a device, a
directory, a symlink loop, an unreadable or oversized file gets the same one-line error
(exit 2) everywhere, and nothing ever blocks on opening a file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from biotool.output import InputError

# Leading bytes of formats an agent hands us by mistake; the message names what the file is.
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"CRAM", "CRAM"),
    (b"BAM\x01", "BAM (uncompressed)"),
    (b"\x89HDF", "HDF5"),
    (b"PK\x03\x04", "zip"),
    (b"\xef\xbb\xbf", "text with a UTF-8 byte-order mark"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def input_file(path: str | os.PathLike, what: str, *, max_bytes: int | None = None,
               allow_dir: bool = False, allow_empty: bool = True) -> Path:
    """The path, once it is known to be a readable regular file (or directory if allowed).

    Uses stat, never open, so a FIFO with no writer cannot block. `what` names the option
    or role (e.g. "--fastq") for the error line.
    """
    text = os.fspath(path)
    if not text or not text.strip():
        raise InputError(f"{what}: empty path")
    p = Path(text)
    try:
        st = os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{what} {text}: symlink loop") from None
        if exc.errno == errno.EACCES:
            raise InputError(f"{what} {text}: permission denied") from None
        if exc.errno == errno.ENOTDIR:
            raise InputError(f"{what} {text}: a component of the path is not a directory") from None
        if os.path.islink(p):
            raise InputError(f"{what} {text}: broken symlink (its target does not exist)") from None
        raise InputError(f"{what} {text}: no such file") from None
    kind = _kind(st.st_mode)
    if kind == "a directory" and allow_dir:
        if not os.access(p, os.R_OK | os.X_OK):
            raise InputError(f"{what} {text}: directory is not readable (permission denied)")
        return p
    if kind is not None:
        wanted = "a regular file or directory" if allow_dir else "a regular file"
        raise InputError(f"{what} {text}: is {kind}, not {wanted}")
    if not os.access(p, os.R_OK):
        raise InputError(f"{what} {text}: permission denied")
    if not allow_empty and st.st_size == 0:
        raise InputError(f"{what} {text}: file is empty")
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(f"{what} {text}: {st.st_size:,} bytes is over the limit of "
                         f"{max_bytes:,} bytes")
    return p


def read_bounded(path: str | os.PathLike, what: str, max_bytes: int) -> bytes:
    """The whole file, refused (exit 2) when it is not a regular file or exceeds max_bytes."""
    p = input_file(path, what, max_bytes=max_bytes)
    with open(p, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # the file grew after the stat
        raise InputError(f"{what} {os.fspath(path)}: over the limit of {max_bytes:,} bytes")
    return data


def magic(path: str | os.PathLike) -> str | None:
    """The name of a binary or encoded format the file starts with, or None for plain text."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    for prefix, name in _MAGIC:
        if head.startswith(prefix):
            return name
    return None


def same_content_key(path: str | os.PathLike) -> tuple[int, int]:
    """(device, inode): two paths that are one file on disk."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def umask() -> int:
    """The process umask, read without changing it (from /proc when available)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    old = os.umask(0o022)  # fallback: set and restore (not thread-safe; CLI is single-threaded)
    os.umask(old)
    return old


def output_file(path: str | os.PathLike, what: str) -> Path:
    """An output path checked before any work: non-empty, its folder exists and is writable,
    and it is not a directory or special file."""
    text = os.fspath(path)
    if not text or not text.strip():
        raise InputError(f"{what}: empty path (give a file name to write)")
    p = Path(text)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{what} {text}: folder {parent} does not exist")
    # The folder first: in a folder we may not search, even asking whether the file exists fails.
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{what} {text}: folder {parent} is not writable")
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise InputError(f"{what} {text}: a broken symlink; give a plain file name") from None
        return p
    except OSError as exc:
        raise InputError(f"{what} {text}: cannot be examined ({exc.strerror or exc})") from None
    kind = _kind(st.st_mode)
    if kind is not None:
        raise InputError(f"{what} {text}: is {kind}, not a file to write")
    return p


def unreadable(what: str, path: str | os.PathLike, exc: Exception) -> InputError:
    """The one refusal of a named file that failed to read (`what`: the option naming it)."""
    return InputError(f"{what} {path}: cannot be read ({getattr(exc, 'strerror', None) or exc})")


@contextlib.contextmanager
def published(final: str | os.PathLike, mode: int | None = 0o666, suffix: str = ".part",
              hold: Callable[[int], None] | None = None) -> Iterator[Path]:
    """Yield a temp path beside `final`; on success give it `mode` less the umask (so a host
    user or a grader under another UID can read it; None: the temp file's 0600) and rename it
    into place; on failure remove it. Nothing half-written is ever visible under the final
    name. The one atomic publication, of outputs and of the cache's files; `hold`: called
    with the temp file's descriptor, kept open until it is published (the cache's flock,
    which tells its sweeper the file is live)."""
    final = Path(final)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=suffix, dir=final.parent)
    tmp_path = Path(tmp)
    try:
        if hold:
            hold(fd)
        else:
            os.close(fd)
            fd = -1
        yield tmp_path
        if mode is not None:
            os.chmod(tmp_path, mode & ~umask())
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise
    finally:
        if fd >= 0:
            os.close(fd)
