"""Resolve `--reference`: a staged name or alias, or a FASTA path indexed into the cache.

Either way the caller gets the FASTA, its faidx, an aligner index per preset on demand
(bwa for short reads, minimap2 for long ones), and provenance items naming each with its sha256.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from biotool import staging
from biotool.cache import atomic_path, entry_dir, sha256_file
from biotool.output import InputError, ToolFailure
from biotool.provenance import used
from biotool.reads.shortreads import SHORT, bwa_index, index_label

PRESETS = ("sr", "map-ont", "map-pb")


@dataclass
class Reference:
    name: str
    fasta: Path
    sha256: str
    staged: dict | None = None
    _index_cache: dict = field(default_factory=dict)

    def index(self, preset: str) -> tuple[Path, str]:
        """The index for `preset` and its sha256 (staged, else built into the cache): bwa's
        prefix for short reads, minimap2's .mmi for the long-read presets."""
        if preset not in PRESETS:
            raise InputError(f"--preset: unknown preset {preset!r}; use auto, sr, map-ont or map-pb")
        if preset in self._index_cache:
            return self._index_cache[preset]
        key = index_label(preset)
        if preset == SHORT:  # bwa's index: built on first use (seconds for a microbe)
            out = bwa_index(self.fasta, self.sha256)
        elif self.staged and key in self.staged.get("files", {}):
            path = staging.path_of(self.staged, key)
            out = (path, self.staged["files"][key]["sha256"])
        else:
            out = _built_index(self.fasta, self.sha256, preset)
        self._index_cache[preset] = out
        return out

    def contigs(self) -> dict[str, int]:
        """Contig name -> length, from the faidx."""
        lengths = {}
        for line in Path(str(self.fasta) + ".fai").read_text().splitlines():
            parts = line.split("\t")
            lengths[parts[0]] = int(parts[1])
        return lengths

    def provenance(self, *presets: str) -> list[dict]:
        items = [used("reference", self.name, self.sha256, path=str(self.fasta))]
        for preset in presets:
            path, digest = self.index(preset)
            items.append(used("index", index_label(preset), digest, path=str(path)))
        return items


def resolve(reference: str) -> Reference:
    """A staged reference by name/alias, else an existing FASTA path; InputError otherwise."""
    record = staging.find("reference", reference)
    if record is not None and not record.get("error") and record.get("files"):
        fasta = staging.path_of(record, "main")
        if not Path(str(fasta) + ".fai").exists():
            raise ToolFailure(f"reference {record['name']}: staged faidx missing beside {fasta}")
        return Reference(record["name"], fasta, record["sha256"], staged=record)
    path = Path(reference)
    if path.is_file():
        return _cached_fasta(path)
    names = sorted(i["name"] for i in staging.staged_items("reference") if not i.get("error"))
    hint = f"staged here: {', '.join(names)}" if names else "nothing is staged here"
    raise InputError(f"--reference {reference!r} is neither a staged reference nor a FASTA file "
                     f"({hint}; run `biotool references`)")


def _cached_fasta(path: Path) -> Reference:
    """Copy a FASTA into the content-keyed cache (atomically) and faidx it there."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1)
    except OSError as exc:
        raise InputError(f"--reference {path}: cannot be read ({exc.strerror or exc})") from None
    if head != b">":
        raise InputError(f"--reference {path}: not a FASTA file (first byte is not '>')")
    digest = sha256_file(path)
    d = entry_dir("reference", digest[:32])
    fasta = d / "reference.fasta"
    fai = Path(str(fasta) + ".fai")
    if not (fasta.exists() and fai.exists()):
        import pysam

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
    return Reference(str(path), fasta, digest)


def _built_index(fasta: Path, digest: str, preset: str) -> tuple[Path, str]:
    import mappy

    final = entry_dir("reference", digest[:32]) / f"reference.{preset}.mmi"
    if not final.exists():
        with atomic_path(final, suffix=".mmi") as tmp:
            aligner = mappy.Aligner(str(fasta), preset=preset, fn_idx_out=str(tmp))
            if not aligner:
                raise ToolFailure(f"minimap2 could not index {fasta} for preset {preset}")
            del aligner
    return final, sha256_file(final)


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
