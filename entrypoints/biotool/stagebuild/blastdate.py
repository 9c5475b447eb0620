"""The creation date makeblastdb writes into a nucleotide or protein database's index file
(.nin/.pin), set to SOURCE_DATE_EPOCH's: the one byte range that differs between two builds of
the same FASTA (makeblastdb has no option for it, and the build has no faketime).

The index header (BLAST database formats 4 and 5; big-endian lengths): format version, sequence
type, [v5: volume number], title (length + bytes), [v5: LMDB file name (length + bytes)], date
(length + bytes, padded with NULs so the header stays aligned). The date is rewritten in place
in BLAST's own format, padded with NULs to the field's length, so no offset moves.
"""

from __future__ import annotations

import datetime
import os
import struct
from pathlib import Path

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def blast_date(epoch: int) -> str:
    """`Dec 3, 2026  4:32 PM`, as makeblastdb writes a time (UTC here)."""
    t = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    hour = t.hour % 12 or 12
    return (f"{MONTHS[t.month - 1]} {t.day}, {t.year} {hour:>2}:{t.minute:02d} "
            f"{'PM' if t.hour >= 12 else 'AM'}")


def _date_field(data: bytes) -> tuple[int, int]:
    """(offset, length) of the date string in an index file's header; ValueError if the
    header is not one of BLAST's formats 4 or 5."""
    if len(data) < 12:
        raise ValueError("too short for a BLAST index header")
    version = struct.unpack(">i", data[:4])[0]
    if version not in (4, 5):
        raise ValueError(f"BLAST database format {version}, not 4 or 5")
    pos = 12 if version == 5 else 8  # version, type, [volume]
    for _ in range(2 if version == 5 else 1):  # title, [LMDB name]
        (n,) = struct.unpack(">i", data[pos:pos + 4])
        pos += 4 + n
    (n,) = struct.unpack(">i", data[pos:pos + 4])
    if n < 0 or pos + 4 + n > len(data):
        raise ValueError("date field runs past the header")
    return pos + 4, n


def set_date(index_file: Path, epoch: int) -> bool:
    """Rewrite the date in one .nin/.pin; False when the new date does not fit the field
    (left as makeblastdb wrote it)."""
    data = bytearray(Path(index_file).read_bytes())
    offset, length = _date_field(bytes(data))
    new = blast_date(epoch).encode()
    if len(new) > length:
        return False
    data[offset:offset + length] = new.ljust(length, b"\0")
    Path(index_file).write_bytes(bytes(data))
    return True


def pin_dates(db_dir: Path) -> list[Path]:
    """With SOURCE_DATE_EPOCH set, every .nin/.pin in db_dir gets its date; the files changed."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit():
        return []
    return [f for f in sorted(Path(db_dir).glob("*.[np]in")) if set_date(f, int(epoch))]
