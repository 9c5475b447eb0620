"""Resolve a reference: a staged name or alias, or (for `--reference`) a FASTA path indexed
into the cache.

Either way the caller gets the FASTA read through its faidx (contig lengths, regions), an
aligner index per preset on demand (bwa for short reads, minimap2 for long ones), and
provenance items naming each with its sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from biotool import staging
from biotool.alignment import indexes
from biotool.alignment.aligners import index_label
from biotool.deadline import UNBOUNDED, Deadline
from biotool.cache import atomic_path, entry_dir
from biotool.files import input_file, magic, unreadable
from biotool.output import InputError, ToolFailure
from biotool.provenance import used
from biotool.staging.item import StagedItem

PRESETS = ("sr", "map-ont", "map-pb")


@dataclass
class Reference:
    name: str
    fasta: Path
    sha256: str
    staged: StagedItem | None = None
    _index_cache: dict = field(default_factory=dict)

    def index(self, preset: str, deadline: Deadline = UNBOUNDED) -> tuple[Path, str]:
        """The index for `preset` and its sha256: bwa's prefix for short reads, minimap2's .mmi
        for the long-read presets; staged, else built into the cache by `deadline`."""
        if preset not in PRESETS:
            raise InputError(f"--preset: unknown preset {preset!r}; use auto, sr, map-ont or map-pb")
        return self.index_of(index_label(preset), deadline)

    def index_of(self, label: str, deadline: Deadline = UNBOUNDED) -> tuple[Path, str]:
        """Index `label` (biotool.alignment.indexes.KINDS) and its sha256: staged, else built into
        the cache by `deadline`."""
        if label in self._index_cache:
            return self._index_cache[label]
        indexes.check_kind(label)
        if self.is_staged(label):
            path = indexes.aligner_path(label, self.staged.path(label))
            out = (path, self.staged.files[label].sha256)
        else:
            out = indexes.cached(self.name, self.fasta, self.sha256, label, deadline)
        self._index_cache[label] = out
        return out

    def is_staged(self, label: str) -> bool:
        return self.staged is not None and label in self.staged.files

    @cached_property
    def _faidx(self):
        """The FASTA opened once through its .fai; one htslib cannot read is a broken staged or
        cached file, not the agent's input (exit 4)."""
        import pysam

        with _fd2_captured() as said:
            try:
                fasta, failed = pysam.FastaFile(str(self.fasta)), None
            except (OSError, ValueError) as exc:
                fasta, failed = None, exc
        if failed is not None:
            htslib = [l.split("] ", 1)[-1] for l in said() if l.startswith("[")]
            raise ToolFailure(f"reference {self.name}: cannot read {self.fasta} through its "
                              f"index ({htslib[0] if htslib else failed})")
        return fasta

    def contigs(self) -> dict[str, int]:
        """Contig name -> length, in file order."""
        return dict(zip(self._faidx.references, self._faidx.lengths))

    def fetch(self, contig: str, start: int = 0, end: int | None = None) -> str:
        """The upper-cased bases of `contig` from 0-based `start` to `end` (exclusive, default
        its end), as pysam counts; callers check the region against contigs()."""
        return self._faidx.fetch(contig, start, end).upper()

    def provenance(self, *presets: str) -> list[dict]:
        items = [used("reference", self.name, self.sha256, path=str(self.fasta))]
        for preset in presets:
            path, digest = self.index(preset)
            items.append(used("index", index_label(preset), digest, path=str(path)))
        return items


def staged(name: str) -> Reference | None:
    """The usable staged reference of that name or alias, or None."""
    item = staging.find("reference", name)
    return _of(item) if staging.usable(item) else None


def required(name: str, what: str, otherwise: str | None = None) -> Reference:
    """The usable staged reference of that name or alias; else the one refusal of an item
    that is not staged here (staging.require), `what` naming where it was given."""
    return _of(staging.require("reference", name, what, otherwise))


def _of(item: StagedItem) -> Reference:
    fasta = item.path()
    if not Path(str(fasta) + ".fai").exists():
        raise ToolFailure(f"reference {item.name}: staged faidx missing beside {fasta}")
    return Reference(item.name, fasta, item.sha256, staged=item)


def resolve(reference: str) -> Reference:
    """A staged reference by name/alias, else an existing FASTA path; InputError otherwise."""
    ref = staged(reference)
    if ref is not None:
        return ref
    if reference and os.path.lexists(reference):
        # A path that exists in some form: refused by kind (FIFO, folder, loop) without opening.
        return _cached_fasta(input_file(reference, "--reference", allow_empty=False))
    return required(reference, "--reference", otherwise="a FASTA file")


# IUPAC nucleotide codes (and gap/stop marks aligners read as N), either case, and line ends.
_NUCLEOTIDE = b"ACGTURYSWKMBDHVNacgturyswkmbdhvn-*.\r\n\t "
# Share of sequence letters outside the IUPAC nucleotide codes above which the file is not a
# nucleotide FASTA (a protein FASTA has ~35% E, F, I, L, P, Q and the like).
NON_NUCLEOTIDE_MAX = 0.01


def check_fasta(path: Path) -> str:
    """The sha256 of a FASTA reference, once it is known to be one minimap2 and samtools can
    index: plain text, every record named (uniquely) and non-empty, nucleotide letters.

    One streaming pass; per chunk the work is in C (translate, find), so a genome-sized file
    costs about what hashing it does."""
    kind = magic(path)
    if kind:
        what = f"{kind}-compressed" if kind in ("gzip", "bzip2", "xz", "zstd") else kind
        raise InputError(f"--reference {path}: unsupported format ({what}); give a plain, "
                         "uncompressed FASTA")
    h = hashlib.sha256()
    names: set[bytes] = set()
    state = {"name": None, "bases": 0, "letters": 0, "odd": 0, "records": 0}
    carry = b""

    def header(line: bytes) -> None:
        _end_record(path, state)
        name = line[1:].split(None, 1)[0] if line[1:].strip() else b""
        if not name:
            raise InputError(f"--reference {path}: not a usable FASTA: record "
                             f"{state['records'] + 1} has an empty name (a bare '>' line); "
                             "every sequence needs a name")
        if not name.isascii() or b"\x00" in line:
            raise InputError(f"--reference {path}: the name line of record "
                             f"{state['records'] + 1} has NUL or non-ASCII bytes")
        if name in names:
            raise InputError(f"--reference {path}: not a usable FASTA (two sequences share a "
                             f"name: {name.decode()})")
        names.add(name)
        state.update(name=name, bases=0, records=state["records"] + 1)

    def sequence(block: bytes, at: int) -> None:
        if state["name"] is None:
            raise InputError(f"--reference {path}: not a FASTA file (first byte is not '>')")
        odd = block.translate(None, _NUCLEOTIDE)
        if odd:
            if b"\x00" in odd:
                where = at + block.find(b"\x00")
                raise InputError(f"--reference {path}: contains a NUL byte (at byte {where}); "
                                 "not a text FASTA")
            if not odd.isascii():
                raise InputError(f"--reference {path}: contains non-ASCII bytes in the sequence "
                                 f"of record {state['name'].decode()}; not a nucleotide FASTA")
        letters = len(block) - block.count(b"\n") - block.count(b"\r")
        state["bases"] += letters
        state["letters"] += letters
        state["odd"] += len(odd)

    def lines(data: bytes, at: int) -> None:
        """Whole lines starting at absolute offset `at`: headers one by one, sequence in runs."""
        pos = 0
        while pos < len(data):
            if data[pos:pos + 1] == b">":
                end = data.find(b"\n", pos)
                end = len(data) if end < 0 else end + 1
                header(data[pos:end])
            else:
                nxt = data.find(b"\n>", pos)
                end = len(data) if nxt < 0 else nxt + 1
                sequence(data[pos:end], at + pos)
            pos = end

    carry_at = 0  # absolute offset of carry[0]
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) < (1 << 26):
                carry = data  # no line end yet; a 64 MB line is taken as it is (memory bound)
                continue
            cut = cut or len(data)
            lines(data[:cut], carry_at)
            carry, carry_at = data[cut:], carry_at + cut
    lines(carry, carry_at)
    _end_record(path, state)
    if state["letters"] and state["odd"] > NON_NUCLEOTIDE_MAX * state["letters"]:
        raise InputError(f"--reference {path}: {state['odd'] / state['letters']:.0%} of its "
                         "sequence letters are not IUPAC nucleotide codes: a protein FASTA? "
                         "give a nucleotide FASTA")
    return h.hexdigest()


def _end_record(path: Path, state: dict) -> None:
    if state["name"] is not None and state["bases"] == 0:
        raise InputError(f"--reference {path}: record {state['name'].decode()} has no sequence "
                         "(an empty record); remove it or add its sequence")


def _cached_fasta(path: Path) -> Reference:
    """Check a FASTA fully, then copy it into the content-keyed cache (atomically) and faidx it
    there; nothing enters the cache for a refused file."""
    try:
        digest = check_fasta(path)
    except OSError as exc:
        raise unreadable("--reference", path, exc) from None
    d = entry_dir("reference", digest[:32])
    fasta = d / "reference.fasta"
    fai = Path(str(fasta) + ".fai")
    if not (fasta.exists() and fai.exists()):
        import pysam

        try:
            with atomic_path(fasta, suffix=".fasta") as tmp:
                shutil.copyfile(path, tmp)
                with _fd2_captured() as said:
                    try:
                        pysam.faidx(str(tmp))
                        failed = False
                    except pysam.SamtoolsError:
                        failed = True
                htslib = [l for l in said() if l.startswith("[")]
                dup = [l for l in htslib if "duplicate sequence" in l]
                if failed or dup:
                    Path(str(tmp) + ".fai").unlink(missing_ok=True)
                    why = (f"two sequences share a name: {dup[0].split('] ', 1)[-1]}" if dup else
                           htslib[0].split("] ", 1)[-1] if htslib else "samtools faidx failed")
                    raise InputError(f"--reference {path}: not a usable FASTA ({why})")
                # The index is published before the FASTA, so a FASTA present implies its index.
                with atomic_path(fai) as tmp_fai:
                    shutil.move(str(tmp) + ".fai", tmp_fai)
        except InputError:
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty: another run's published files stay
            raise
    return Reference(str(path), fasta, digest)


@contextlib.contextmanager
def _fd2_captured():
    """Collect what htslib writes to file descriptor 2 (it bypasses sys.stderr), so its
    messages can go into our one-line error instead of around it."""
    with tempfile.TemporaryFile() as buf:
        saved = os.dup(2)
        os.dup2(buf.fileno(), 2)
        lines: list[str] = []
        try:
            yield lambda: lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            buf.seek(0)
            lines += buf.read().decode(errors="replace").splitlines()
