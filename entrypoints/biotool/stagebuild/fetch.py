"""Downloads for staging and pinning: resumed after a cut, checked byte for byte, never half-kept.

A download goes to `<dest>.part`; a connection cut part-way is resumed with an HTTP Range
request (or restarted cleanly where the server ignores ranges), a few times with backoff.
The digest is taken over the bytes as they arrive; a file whose size or sha256 differs from
its pin is deleted and refused with one line naming the item. Progress goes to stderr.

BIOTOOL_SOURCE_MIRROR (TEST ONLY): a base URL that every source is fetched through, as
`<mirror>/<host>/<path>` (the tests' local fake source server). Manifests, lock and records
keep the real URLs; only the bytes come from the mirror.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from biotool.settings import FETCH_BACKOFF, SOURCE_MIRROR
from biotool.staging import StagingError

ATTEMPTS = 4
TIMEOUT = 120  # seconds without a byte before a read counts as a cut connection
_CHUNK = 1 << 20


def mirrored(url: str) -> str:
    """The URL actually requested: the real one, or its stand-in under BIOTOOL_SOURCE_MIRROR."""
    mirror = (SOURCE_MIRROR.get() or "").rstrip("/")
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{mirror}/{parts.netloc}{parts.path}" + (f"?{parts.query}" if parts.query else "")


def _backoff(attempt: int) -> float:
    return FETCH_BACKOFF.get() * (2 ** attempt)


def read_bytes(url: str, label: str, limit: int = 64 << 20) -> bytes:
    """A small document (an index, an API answer, an .md5 file), with retries."""
    last = ""
    for attempt in range(ATTEMPTS):
        try:
            with urllib.request.urlopen(mirrored(url), timeout=TIMEOUT) as resp:
                data = resp.read(limit + 1)
            if len(data) > limit:
                raise StagingError(f"{label}: {url} is larger than {limit} bytes")
            return data
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                raise StagingError(f"{label}: {url} answered HTTP {exc.code}") from None
            last = f"HTTP {exc.code}"
        except (OSError, http.client.HTTPException) as exc:
            last = str(exc) or type(exc).__name__
        time.sleep(_backoff(attempt))
    raise StagingError(f"{label}: {url} failed after {ATTEMPTS} attempts ({last})")


class PinMismatch(StagingError):
    """What arrived (or is announced) is not what the lock pins: the source changed."""

    def __init__(self, label: str, url: str, what: str):
        super().__init__(f"{label}: {url} {what}: refused")
        self.url, self.what = url, what


class _KeepHead(urllib.request.HTTPRedirectHandler):
    """Follow a redirect (Hugging Face sends LFS files to its CDN) as HEAD still: urllib's
    own handler turns it into a GET, which would start the download it means to avoid."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and req.get_method() == "HEAD":
            new.method = "HEAD"
        return new


def head_size(url: str) -> int | None:
    """The size a HEAD request announces for `url`; None when the server does not say (or
    does not answer HEAD), which leaves the check to the download."""
    try:
        req = urllib.request.Request(mirrored(url), method="HEAD")
        with urllib.request.build_opener(_KeepHead).open(req, timeout=30) as resp:
            length = resp.headers.get("Content-Length")
    except (OSError, http.client.HTTPException, ValueError):
        return None
    return int(length) if length and length.isdigit() else None


class _Progress:
    def __init__(self, label: str, total: int | None):
        self.label, self.total, self.last = label, total, time.monotonic()

    def __call__(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < 5:
            return
        self.last = now
        of = f" of {self.total / 1e6:.1f} MB ({100 * done / self.total:.0f}%)" if self.total else ""
        sys.stderr.write(f"staging: {self.label}: {done / 1e6:.1f} MB{of}\n")
        sys.stderr.flush()


def download(url: str, dest: Path, label: str, sha256: str | None = None,
             size: int | None = None) -> dict:
    """Fetch `url` into `dest` (atomically); {"url", "sha256", "size"} of what arrived.

    With `sha256`/`size` given (a pin), a mismatch deletes the download and raises.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    part.unlink(missing_ok=True)
    digest = hashlib.sha256()
    have, total, last = 0, size, ""
    progress = _Progress(label, size)
    for attempt in range(ATTEMPTS):
        req = urllib.request.Request(mirrored(url))
        if have:
            req.add_header("Range", f"bytes={have}-")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                if have and resp.status != 206:
                    # The server ignored the range: start again from the first byte.
                    have, digest = 0, hashlib.sha256()
                    part.unlink(missing_ok=True)
                length = resp.headers.get("Content-Length")
                expected = have + int(length) if length is not None else None
                if size is not None and expected is not None and expected != size:
                    part.unlink(missing_ok=True)  # the source changed: no byte of it is needed
                    raise PinMismatch(label, url, f"is {expected} bytes now, the lock pins {size}")
                if total is None and expected is not None:
                    total = progress.total = expected
                with open(part, "ab") as out:
                    while chunk := resp.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        have += len(chunk)
                        progress(have)
                if expected is not None and have < expected:
                    raise http.client.IncompleteRead(b"", expected - have)
            break
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code != 416:
                part.unlink(missing_ok=True)
                raise StagingError(f"{label}: {url} answered HTTP {exc.code}") from None
            last = f"HTTP {exc.code}"
        except (OSError, http.client.HTTPException) as exc:
            last = f"connection cut after {have} bytes ({type(exc).__name__})"
        sys.stderr.write(f"staging: {label}: {last}; retrying\n")
        time.sleep(_backoff(attempt))
    else:
        part.unlink(missing_ok=True)
        raise StagingError(f"{label}: {url} failed after {ATTEMPTS} attempts ({last})")
    progress(have, final=True)
    got = digest.hexdigest()
    if (size is not None and have != size) or (sha256 is not None and got != sha256):
        part.unlink(missing_ok=True)
        raise PinMismatch(label, url, f"has sha256 {got} ({have} bytes), the lock pins "
                                      f"{sha256} ({size} bytes)")
    os.replace(part, dest)
    return {"url": url, "sha256": got, "size": have}
