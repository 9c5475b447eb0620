"""A local stand-in for the production sources staging fetches from (stdlib HTTP server).

It serves a directory laid out as `<root>/<host>/<path>`, so with BIOTOOL_SOURCE_MIRROR set
to its base URL every real source URL maps onto it. The files are shaped like the real ones
(`write_*` below): CellTypist's `models.json` index and real CellTypist `.pkl` models, a
Hugging Face model API answer and `resolve/<revision>/` files, plain-gzip `.fna.gz`
genomes (with NCBI's prebuilt bwa index tarball where the manifest names one), an NCBI
BLAST database tarball carrying a real-format `taxdb` (and taxdb's own
tarball) with their `.md5` files, a protein one (Swiss-Prot's place) of real SARS-CoV-2
proteins, a RefSeq annotation GFF3, gene annotation GTFs in GENCODE's and NCBI's layouts on the
fake genomes' designed genes, a Kraken 2 database tarball built by the real kraken2-build
from real viral genomes (refs/demo), NCBI's `md5checksums.txt` in every genomes/refseq folder
and GENCODE's MD5SUMS in its release folder. It answers HEAD as GET does, without the body. A test changes
a file's bytes between pin and stage by rewriting it under `root` (a daily file rewritten).

It misbehaves on request, per path (`server.faults[path] = ...`):
  "404"        answers 404
  "wrong-byte" serves the file with one byte changed
  "cut-once"   the first request sends half the body then drops the connection
  "cut"        every request does
  "no-range"   ignores Range headers (a resumed download must restart cleanly)
  "cut-once-no-range"  the first request is cut, later ones ignore Range headers
  "redirect"   answers 302 to the same file under /moved/
  "cdn"        answers 302 to another host, as Hugging Face sends LFS files to its CDN (the
               mirror path /cdn-lfs.hf.co/<sha256> of the same bytes)
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import json
import shutil
import struct
import subprocess
import tarfile
import threading
from pathlib import Path


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the tests read `server.requests` instead
        pass

    def do_HEAD(self):  # noqa: N802 - the stdlib's name
        self.do_GET(head=True)

    def do_GET(self, head: bool = False):  # noqa: N802 - the stdlib's name
        srv: FakeSources = self.server.owner
        path = self.path.split("?", 1)[0]
        moved = path.startswith(("/moved/", "/cdn-lfs.hf.co/"))
        key = ("/" + path.split("/", 2)[2]) if moved else path
        if path.startswith("/cdn-lfs.hf.co/"):
            key = srv.cdn.get(path, "/")
        srv.requests.append((path, self.headers.get("Range")) if not head else (path, "HEAD"))
        fault = srv.faults.get(key)
        if fault in ("redirect", "cdn") and not moved:
            self.send_response(302)
            if fault == "cdn":
                cdn = f"/cdn-lfs.hf.co/{hashlib.sha256(key.encode()).hexdigest()}"
                srv.cdn[cdn] = key
                self.send_header("Location", f"{srv.url}{cdn}?Expires=1&Signature=x")
            else:
                self.send_header("Location", f"{srv.url}/moved{key}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        file = (srv.root / key.lstrip("/")).resolve()
        if fault == "404" or not file.is_file() or srv.root.resolve() not in file.parents:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = file.read_bytes()
        if fault == "wrong-byte":
            data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[len(data) // 2 + 1:]
        start = 0
        rng = self.headers.get("Range")
        if rng and fault not in ("no-range", "cut-once-no-range") and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if head:
            return
        cut = fault == "cut" or (fault in ("cut-once", "cut-once-no-range")
                                   and key not in srv.cut_done)
        if cut:
            srv.cut_done.add(key)
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


class FakeSources:
    """The server: `with FakeSources(root) as src: src.url ...`."""

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0):
        self.root = Path(root)
        self.faults: dict[str, str] = {}
        self.cut_done: set[str] = set()
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header or "HEAD")
        self.cdn: dict[str, str] = {}
        self._httpd = http.server.ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeSources:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def path_of(self, url: str) -> str:
        """The server path a real URL maps to (the key for `faults`)."""
        return "/" + url.split("://", 1)[1].split("?", 1)[0]


# ---------------------------------------------------------------- real-shaped content

def _place(root: Path, url: str) -> Path:
    path = Path(root) / url.split("://", 1)[1].split("?", 1)[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_celltypist(root: Path, index_url: str, models: dict[str, tuple[Path, str]]) -> None:
    """CellTypist's index: {"models": [{"filename", "url", "version", ...}]} and each .pkl
    at its versioned URL. models: filename -> (pkl path, versioned url)."""
    entries = []
    for filename, (pkl, url) in models.items():
        shutil.copyfile(pkl, _place(root, url))
        entries.append({"filename": filename, "url": url, "version": url.split("/")[-2],
                        "date": "2024-01-01", "details": f"fake {filename} for tests",
                        "No_celltypes": 10, "source": "biotool_testing/fake_sources.py",
                        "default": False})
    _place(root, index_url).write_text(json.dumps({"models": entries}, indent=1))


def write_hf_repo(root: Path, repo: str, folder: Path, extra: dict[str, bytes] | None = None) -> str:
    """A Hugging Face model at one revision: the API answer (`?blobs=true` shape, LFS sha256
    for weights) and every file under resolve/<revision>/. Returns the revision."""
    files = {p.relative_to(folder).as_posix(): p.read_bytes()
             for p in sorted(Path(folder).rglob("*")) if p.is_file()}
    files.update(extra or {})
    revision = hashlib.sha1(b"".join(hashlib.sha256(v).digest() for v in files.values())).hexdigest()
    siblings = []
    for name, data in files.items():
        sib = {"rfilename": name, "size": len(data)}
        if name.endswith((".safetensors", ".bin")):
            sib["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        siblings.append(sib)
        _place(root, f"https://huggingface.co/{repo}/resolve/{revision}/{name}").write_bytes(data)
    answer = {"id": repo, "modelId": repo, "sha": revision, "siblings": siblings,
              "lastModified": "2024-01-01T00:00:00.000Z"}
    _place(root, f"https://huggingface.co/api/models/{repo}/revision/main").write_text(
        json.dumps(answer))
    return revision


def write_plain_gzip(root: Path, url: str, text: str) -> Path:
    """NCBI's .fna.gz / .gz files are plain gzip (not BGZF)."""
    path = _place(root, url)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return path


def write_bwa_index(root: Path, url: str, fasta: str, work: Path) -> None:
    """A publisher's prebuilt bwa index of `fasta` as a tarball, its files named by the FASTA
    file's name as NCBI's are (<name>.fna.amb, .ann, .bwt, .pac, .sa)."""
    work.mkdir(parents=True, exist_ok=True)
    stem = url.rsplit("/", 1)[-1].split(".bwa_index")[0]
    (work / stem).write_text(fasta)
    subprocess.run(["bwa", "index", str(work / stem)], check=True, capture_output=True)
    _tar_gz(_place(root, url), work, [stem + s for s in (".amb", ".ann", ".bwt", ".pac", ".sa")])


def write_md5_lists(root: Path) -> None:
    """NCBI's md5checksums.txt (`<md5>  ./<name>` per file) in every folder of genomes/ and
    refseq/ that holds files, and GENCODE's MD5SUMS (`<md5>  <name>`) in each of its release
    folders, as the real folders have."""
    lists = [("ftp.ncbi.nlm.nih.gov/genomes", "md5checksums.txt", "./"),
             ("ftp.ncbi.nlm.nih.gov/refseq", "md5checksums.txt", "./"),
             ("ftp.ebi.ac.uk/pub/databases/gencode", "MD5SUMS", "")]
    for top, listing, prefix in lists:
        for folder in sorted({f.parent for f in (Path(root) / top).rglob("*")
                              if f.is_file() and f.name != listing}):
            lines = [f"{hashlib.md5(f.read_bytes()).hexdigest()}  {prefix}{f.name}"
                     for f in sorted(folder.iterdir()) if f.is_file() and f.name != listing]
            (folder / listing).write_text("\n".join(lines) + "\n")


def _taxdb(folder: Path, names: dict[int, str]) -> None:
    """NCBI taxdb.bti/.btd: big-endian magic 0x8739, count, 4 reserved words, then sorted
    (taxid, offset) pairs; the data file holds 'sciname\\tcommon\\tblast name\\tkingdom'."""
    data, pairs = b"", []
    for taxid in sorted(names):
        pairs.append(struct.pack(">II", taxid, len(data)))
        data += f"{names[taxid]}\t{names[taxid]}\tviruses\tViruses".encode()
    (folder / "taxdb.btd").write_bytes(data)
    (folder / "taxdb.bti").write_bytes(struct.pack(">6I", 0x8739, len(names), 0, 0, 0, 0)
                                       + b"".join(pairs))


def _tar_gz(archive: Path, folder: Path, names: list[str]) -> None:
    with tarfile.open(archive, "w:gz") as tar:
        for n in names:
            tar.add(folder / n, arcname=n)


def write_blastdb(root: Path, db_url: str, taxdb_url: str, work: Path,
                  records: list[tuple[str, str, int, str, str]], molecule: str = "nucl",
                  names: dict[int, str] | None = None) -> None:
    """An NCBI prebuilt BLAST database (v5, taxids; `molecule` "nucl" or "prot") as
    <db>.tar.gz, carrying taxdb.btd/.bti as NCBI's tarballs do, and taxdb.tar.gz, each with
    its .md5. records: (accession, title, taxid, scientific name, sequence); names: every
    taxon taxdb names (NCBI's one taxdb serves all its databases), default the records'."""
    name = db_url.rsplit("/", 1)[-1].split(".tar")[0]
    work.mkdir(parents=True, exist_ok=True)
    fasta = work / "in.fa"
    fasta.write_text("".join(f">{a} {t}\n{s}\n" for a, t, _, _, s in records))
    (work / "taxid.map").write_text("".join(f"{a} {tx}\n" for a, _, tx, _, _ in records))
    subprocess.run(["makeblastdb", "-in", str(fasta), "-dbtype", molecule, "-parse_seqids",
                    "-taxid_map", str(work / "taxid.map"), "-blastdb_version", "5",
                    "-title", name, "-out", str(work / name)], check=True, capture_output=True)
    _taxdb(work, names or {tx: sci for _, _, tx, sci, _ in records})
    for url, members in ((db_url, sorted(p.name for p in work.glob(f"{name}.{molecule[0]}*"))
                          + ["taxdb.btd", "taxdb.bti"]),
                         (taxdb_url, ["taxdb.btd", "taxdb.bti"])):
        archive = _place(root, url)
        _tar_gz(archive, work, members)
        md5 = hashlib.md5(archive.read_bytes()).hexdigest()
        _place(root, url + ".md5").write_text(f"{md5}  {archive.name}\n")


def write_gene_gff(root: Path, gff_url: str, taxid: int, chromosomes: dict[str, str],
                   genes: list[dict]) -> None:
    """A RefSeq annotation release GFF3.gz with region, gene (symbol, `gene_synonym`,
    description) and CDS lines. chromosomes: RefSeq accession -> chromosome name; genes:
    {"gene_id", "symbol", "synonyms", "description", "accession", "strand", "exons": [(a, b)],
    "protein_id", "product", "tag"?, "extra_cds"?: [(protein_id, [(a, b)])]}."""
    lines = ["##gff-version 3", "#!processor NCBI annotwriter"]
    for acc, chrom in chromosomes.items():
        genome = "mitochondrion" if chrom == "MT" else "chromosome"
        lines.append(f"{acc}\tRefSeq\tregion\t1\t100000\t.\t+\t.\tID={acc}:1..100000;"
                     f"Dbxref=taxon:{taxid};Name={chrom};chromosome={chrom};gbkey=Src;"
                     f"genome={genome};mol_type=genomic DNA")
    for g in genes:
        models = [(g["protein_id"], g["exons"], g.get("tag"))]
        models += [(pid, ex, None) for pid, ex in g.get("extra_cds", [])]
        lo = min(a for _, ex, _ in models for a, _ in ex)
        hi = max(b for _, ex, _ in models for _, b in ex)
        synonyms = f";gene_synonym={','.join(g['synonyms'])}" if g["synonyms"] else ""
        lines.append(f"{g['accession']}\tBestRefSeq\tgene\t{lo}\t{hi}\t.\t{g['strand']}\t.\t"
                     f"ID=gene-{g['symbol']};Dbxref=GeneID:{g['gene_id']};Name={g['symbol']};"
                     f"description={g['description'].replace(',', '%2C')};gbkey=Gene;"
                     f"gene={g['symbol']};gene_biotype=protein_coding" + synonyms)
        for pid, exons, tag in models:
            for a, b in exons:
                attrs = (f"ID=cds-{pid};Parent=rna-NM_{pid[3:]};Dbxref=GeneID:{g['gene_id']},"
                         f"GenBank:{pid};Name={pid};gbkey=CDS;gene={g['symbol']};"
                         f"product={g['product'].replace(',', '%2C')};protein_id={pid}")
                if tag:
                    attrs += f";tag={tag}"
                lines.append(f"{g['accession']}\tBestRefSeq\tCDS\t{a}\t{b}\t.\t{g['strand']}\t0\t"
                             + attrs)
    write_plain_gzip(root, gff_url, "\n".join(lines) + "\n")


def write_gtf(root: Path, url: str, seqid: str, genes: list[dict], style: str) -> None:
    """A gene annotation GTF.gz of `genes` (as _design makes them, with "extra_cds" models) on
    sequence `seqid`, in GENCODE's layout (`style` "gencode": Ensembl ids, gene_type,
    gene_name) or NCBI's (`style` "refseq": the symbol as gene_id, db_xref GeneID)."""
    if style == "gencode":
        lines = ["##description: evidence-based annotation of the human genome (GRCh38), "
                 "version 46 (Ensembl 112) - fake for tests", "##provider: GENCODE",
                 "##format: gtf", "##date: 2024-02-26"]
    else:
        lines = ["#gtf-version 2.2", "#!genome-build GRCm39",
                 "#!annotation-source NCBI RefSeq GCF_000001635.27-RS_2024_02 (fake for tests)"]
    src = "HAVANA" if style == "gencode" else "BestRefSeq"
    for n, g in enumerate(genes, start=1):
        models = [(g["protein_id"], g["exons"])] + list(g.get("extra_cds", []))
        lo = min(a for _, ex in models for a, _ in ex)
        hi = max(b for _, ex in models for _, b in ex)
        if style == "gencode":
            gid = f'gene_id "ENSG{n:011d}.1"'
            gene = f'{gid}; gene_type "protein_coding"; gene_name "{g["symbol"]}"; level 2;'
        else:
            gid = f'gene_id "{g["symbol"]}"'
            gene = (f'{gid}; transcript_id ""; db_xref "GeneID:{g["gene_id"]}"; '
                    f'description "{g["description"]}"; gbkey "Gene"; gene "{g["symbol"]}"; '
                    f'gene_biotype "protein_coding";')
        lines.append(f"{seqid}\t{src}\tgene\t{lo}\t{hi}\t.\t{g['strand']}\t.\t{gene}")
        for t, (pid, exons) in enumerate(models, start=1):
            tx = (f'ENST{n:09d}{t:02d}.1' if style == "gencode" else
                  ("NM_" if pid.startswith("NP_") else "XM_") + pid[3:])
            tattr = f'{gid}; transcript_id "{tx}";'
            tattr += (f' gene_type "protein_coding"; gene_name "{g["symbol"]}";'
                      if style == "gencode" else f' gene "{g["symbol"]}";')
            t_lo, t_hi = min(a for a, _ in exons), max(b for _, b in exons)
            lines.append(f"{seqid}\t{src}\ttranscript\t{t_lo}\t{t_hi}\t.\t{g['strand']}\t.\t"
                         f"{tattr}")
            order = exons if g["strand"] == "+" else exons[::-1]
            for k, (a, b) in enumerate(order, start=1):
                for feature in ("exon", "CDS"):
                    extra = f' exon_number "{k}";' + (f' protein_id "{pid}";'
                                                       if feature == "CDS" else "")
                    lines.append(f"{seqid}\t{src}\t{feature}\t{a}\t{b}\t.\t{g['strand']}\t"
                                 f"{'0' if feature == 'CDS' else '.'}\t{tattr}{extra}")
    write_plain_gzip(root, url, "\n".join(lines) + "\n")


def write_kraken2_db(root: Path, url: str, work: Path, genomes: list[tuple[str, str, int, str]],
                     taxonomy: list[tuple[int, int, str, str]]) -> None:
    """A Kraken 2 database tarball as the genome-idx collection publishes one (the database's
    files at the top level: hash.k2d, opts.k2d, taxo.k2d, seqid2taxid.map, inspect.txt), built
    by the real kraken2-build. genomes: (accession, title, taxid, sequence); taxonomy: (taxid,
    parent, rank, scientific name), written as NCBI's nodes.dmp and names.dmp."""
    db = work / "k2"
    shutil.rmtree(db, ignore_errors=True)
    (db / "taxonomy").mkdir(parents=True)
    (db / "taxonomy" / "nodes.dmp").write_text("".join(
        "\t|\t".join([str(t), str(p), rank, "", *"00100000", ""]) + "\t|\n"
        for t, p, rank, _ in taxonomy))
    (db / "taxonomy" / "names.dmp").write_text("".join(
        f"{t}\t|\t{name}\t|\t\t|\tscientific name\t|\n" for t, _, _, name in taxonomy))
    library = work / "library.fa"
    # kraken2-build reads each sequence's taxon from its header (kraken:taxid|N).
    library.write_text("".join(f">{acc}|kraken:taxid|{tx} {title}\n{seq}\n"
                               for acc, title, tx, seq in genomes))
    for cmd in (["kraken2-build", "--add-to-library", str(library), "--db", str(db)],
                ["kraken2-build", "--build", "--db", str(db), "--threads", "1"]):
        subprocess.run(cmd, check=True, capture_output=True)
    inspect = subprocess.run(["kraken2-inspect", "--db", str(db)], check=True,
                             capture_output=True, text=True).stdout
    (db / "inspect.txt").write_text(inspect)
    _tar_gz(_place(root, url), db, ["hash.k2d", "opts.k2d", "taxo.k2d", "seqid2taxid.map",
                                     "inspect.txt"])


def read_fasta(path: Path) -> dict[str, tuple[str, str]]:
    """{accession: (title, sequence)} of a FASTA file (the accession: the id's last
    `ref|ACC|` part where NCBI's old gi headers have one)."""
    out, key = {}, None
    for line in Path(path).read_text().splitlines():
        if line.startswith(">"):
            ident, _, title = line[1:].partition(" ")
            parts = [p for p in ident.split("|") if p]
            key = parts[parts.index("ref") + 1] if "ref" in parts else parts[0]
            out[key] = (title.strip(), "")
        elif key:
            out[key] = (out[key][0], out[key][1] + line.strip())
    return out


def demo_proteins(demo: Path) -> list[tuple[str, str, str]]:
    """(protein_id, product, protein) of every SARS-CoV-2 CDS with a protein id in the demo gene
    table, translated from the real genome at its annotated coordinates."""
    from Bio.Seq import Seq

    (_, genome), = read_fasta(demo / "sarscov2" / "MN908947.3.reference.fasta").values()
    rows = [l.split("\t") for l in (demo / "annotation" / "genes.tsv").read_text().splitlines()
            if l and not l.startswith("#")]
    head = rows[0]
    out = []
    for r in (dict(zip(head, r)) for r in rows[1:]):
        if r["reference"] != "MN908947.3" or not r["protein_id"]:
            continue
        nt = "".join(genome[int(a) - 1:int(b)] for a, b in
                     (seg.split("..") for seg in r["cds"].split(",")))
        protein = str(Seq(nt).translate()).rstrip("*")
        assert "*" not in protein, r["protein_id"]
        out.append((r["protein_id"], r["product"], protein))
    return out


# Real NCBI taxids of the demo genomes' organisms, the intermediate ranks left out.
K2_TAXONOMY = [(1, 1, "no rank", "root"), (10239, 1, "superkingdom", "Viruses"),
               (694009, 10239, "species", "Severe acute respiratory syndrome-related coronavirus"),
               (2697049, 694009, "no rank", "Severe acute respiratory syndrome coronavirus 2"),
               (11676, 10239, "species", "Human immunodeficiency virus 1"),
               (10847, 10239, "species", "Escherichia phage phiX174"),
               (11320, 10239, "species", "Influenza A virus"),
               (211044, 11320, "no rank", "Influenza A virus (A/Puerto Rico/8/1934(H1N1))"),
               (641809, 11320, "no rank", "Influenza A virus (A/California/07/2009(H1N1))")]
K2_GENOMES = [("sarscov2/MN908947.3.reference.fasta", 2697049), ("genomes/hiv1.fasta", 11676),
              ("genomes/phiX174.fasta", 10847)]


def _k2_genomes(demo: Path) -> list[tuple[str, str, int, str]]:
    out = [(acc, title, tx, seq) for path, tx in K2_GENOMES
           for acc, (title, seq) in read_fasta(demo / path).items()]
    for acc, (title, seq) in read_fasta(demo / "influenza" / "influenza_a_h1n1.fasta").items():
        out.append((acc, title, 641809 if "California/07/2009" in title else 211044, seq))
    return out


# ---------------------------------------------------------------- inputs cut from the truth

def mutate(seq: str, every: int, alphabet: str, rng) -> str:
    """`seq` with one substitution every `every` letters: a real read or homologue, not a copy."""
    out = list(seq)
    for i in range(every // 2, len(out), every):
        out[i] = rng.choice([c for c in alphabet if c != out[i]])
    return "".join(out)


def reads_within(genome: str, spans: list[tuple[int, int]], n: int, length: int,
                 rng) -> list[str]:
    """`n` reads of `length` lying wholly inside one of the 1-based `spans` of `genome`."""
    out = []
    for _ in range(n):
        a, b = rng.choice([s for s in spans if s[1] - s[0] + 1 >= length])
        start = rng.randint(a, b - length + 1)
        out.append(genome[start - 1:start - 1 + length])
    return out


def gene_reads(truth: dict, reference: str, rng, per_gene: tuple[int, ...] = (30, 12),
               between: int = 7) -> tuple[list[str], dict[str, int]]:
    """Reads from the designed genes' exons (every model's) and from between the genes, and
    how many of them each gene should be given: (reads, {symbol: count})."""
    genome = truth["genomes"][reference]["sequence"]
    reads, want = [], {}
    for n, g in zip(per_gene, truth["genes"][reference]):
        exons = list(g["exons"]) + [e for _, ex in g.get("extra_cds", []) for e in ex]
        reads += reads_within(genome, exons, n, 100, rng)
        want[g["symbol"]] = n
    reads += reads_within(genome, [(1, 900), (4000, len(genome))], between, 100, rng)
    return reads, want


def virus_reads(truth: dict, accessions: tuple[str, ...], rng,
                per: int = 5) -> list[tuple[str, str]]:
    """(name "ACC/offset", read) from the Kraken 2 database's real genomes, one substitution in
    50, plus one random read ("random") that no database should classify."""
    reads = []
    for acc in accessions:
        seq = truth["kraken2"][acc]["sequence"]
        for _ in range(per):
            at = rng.randrange(len(seq) - 150)
            reads.append((f"{acc}/{at}", mutate(seq[at:at + 150], 50, "ACGT", rng)))
    reads.append(("random", "".join(rng.choice("ACGT") for _ in range(150))))
    return reads


def protein_queries(truth: dict, rng) -> dict[str, str]:
    """{protein id: a homologue of 200 residues of it, one substitution in 15}."""
    return {pid: mutate(seq[10:210], 15, "ACDEFGHIKLMNPQRSTVWY", rng)
            for pid, seq in truth["proteins"].items() if len(seq) >= 220}


# ---------------------------------------------------------------- every production item

CELLTYPIST_INDEX = "https://celltypist.cog.sanger.ac.uk/models/models.json"
_CODONS = [a + b + c for a in "ACGT" for b in "ACGT" for c in "ACGT"
           if a + b + c not in ("TAA", "TAG", "TGA")]


def revcomp(seq: str) -> str:
    return seq[::-1].translate(str.maketrans("ACGTN", "TGCAN"))


def _design(rng, chrom_len: int, genes: list[tuple]) -> tuple[str, list[dict]]:
    """A random chromosome carrying each gene's CDS (ATG ... stop) in its exons; genes are
    (symbol, gene_id, strand, exons, protein_id, tag, description, synonyms)."""
    seq = list("".join(rng.choice("ACGT") for _ in range(chrom_len)))
    out = []
    for symbol, gid, strand, exons, pid, tag, desc, syn in genes:
        n = sum(b - a + 1 for a, b in exons)
        assert n % 3 == 0
        cds = "ATG" + "".join(rng.choice(_CODONS) for _ in range(n // 3 - 2)) + "TAA"
        joined = cds if strand == "+" else revcomp(cds)
        at = 0
        for a, b in exons:
            seq[a - 1:b] = joined[at:at + b - a + 1]
            at += b - a + 1
        out.append({"symbol": symbol, "gene_id": gid, "strand": strand, "exons": exons,
                    "protein_id": pid, "tag": tag, "description": desc, "synonyms": syn,
                    "product": desc, "cds": cds})
    return "".join(seq), out


def _fasta(records: dict[str, str], titles: dict[str, str]) -> str:
    out = []
    for name, seq in records.items():
        out.append(f">{name} {titles.get(name, '')}".rstrip())
        out += [seq[i:i + 80] for i in range(0, len(seq), 80)]
    return "\n".join(out) + "\n"


VIRUSES = [("NC_045512.2", "Severe acute respiratory syndrome coronavirus 2 isolate Wuhan-Hu-1, "
            "complete genome", 2697049, "Severe acute respiratory syndrome coronavirus 2"),
           ("NC_001802.1", "Human immunodeficiency virus 1, complete genome", 11676,
            "Human immunodeficiency virus 1"),
           ("NC_001422.1", "Escherichia phage phiX174, complete genome", 10847,
            "Escherichia phage phiX174"),
           ("NC_001477.1", "Dengue virus 1, complete genome", 11053, "dengue virus type 1")]


def populate(root: Path, manifests: Path, work: Path, celltypist_models: dict[str, Path],
             c2s_folder: Path, seed: int = 0) -> dict:
    """Write a stand-in for every production source the manifests name; the known truth
    (genomes, designed genes, virus sequences, HF revision) for the tests to check against."""
    import random

    from biotool.staging import load_manifests

    rng = random.Random(seed)
    truth: dict = {"genomes": {}, "genes": {}, "viruses": {}}
    index: dict[str, tuple[Path, str]] = {}
    for e in load_manifests(manifests):
        if e.get("set") != "production":
            continue
        src = e.get("source")
        if e["kind"] == "model" and e.get("framework") == "celltypist":
            filename = e.get("model_file") or src.rsplit("/", 1)[-1]
            url = (src if not e.get("model_file") else
                   f"https://celltypist.cog.sanger.ac.uk/models/{Path(filename).stem}/v2/{filename}")
            if e["name"] in celltypist_models:
                index[filename] = (celltypist_models[e["name"]], url)
        elif e.get("prepare") == "hf-model":
            truth["hf_revision"] = write_hf_repo(root, e["repo"], c2s_folder)
        elif e.get("prepare") == "blastdb-tar" and e.get("molecule") == "protein":
            proteins = demo_proteins(Path(manifests) / "demo")
            truth["proteins"] = {pid: seq for pid, _, seq in proteins}
            sars = VIRUSES[0]
            write_blastdb(root, src[0], src[1], work / "protein-blastdb",
                          [(pid, f"RecName: Full={product}", sars[2], sars[3], seq)
                           for pid, product, seq in proteins], molecule="prot",
                          names={tx: sci for _, _, tx, sci in VIRUSES})
        elif e.get("prepare") == "blastdb-tar":
            seqs = {a: "".join(rng.choice("ACGT") for _ in range(1500)) for a, *_ in VIRUSES}
            truth["viruses"] = seqs
            write_blastdb(root, src[0], src[1], work / "blastdb",
                          [(a, t, tx, sci, seqs[a]) for a, t, tx, sci in VIRUSES])
        elif e.get("prepare") == "kraken2-tar":
            genomes = _k2_genomes(Path(manifests) / "demo")
            truth["kraken2"] = {acc: {"taxid": tx, "sequence": seq} for acc, _, tx, seq in genomes}
            write_kraken2_db(root, src, work / "kraken2", genomes, K2_TAXONOMY)
        elif e.get("prepare") == "fasta" and e["kind"] == "reference":
            human = e["name"] == "GRCh38"
            acc = "NC_000017.11" if human else "NC_000077.7"
            chrom = "17" if human else "11"
            name = "chr17" if human else acc
            p53 = ("TP53" if human else "Trp53", "7157" if human else "22059", "-",
                   [(1001, 1300), (2001, 2402)], "NP_000537.3" if human else "NP_035770.2",
                   "MANE Select" if human else "RefSeq Select",
                   "tumor protein p53" if human else "transformation related protein 53",
                   ["BCC7", "LFS1", "P53"] if human else ["p53", "bbl"])
            other = ("SHBG" if human else "Shbg", "6462" if human else "20415", "+",
                     [(3101, 3400), (3601, 3900)], "NP_001031.2" if human else "NP_035497.1",
                     None, "sex hormone binding globulin", [])
            seq, genes = _design(rng, 5000, [p53, other])
            genes[0]["extra_cds"] = [("XP_011522452.1", [(1001, 1300), (1501, 1800),
                                                         (2001, 2402)])]
            genes[0]["accession"] = genes[1]["accession"] = acc
            truth["genomes"][e["name"]] = {"seqid": name, "sequence": seq}
            truth["genes"][e["name"]] = genes
            fasta = _fasta({name: seq}, {name: "fake chromosome " + chrom})
            write_plain_gzip(root, src, fasta)
            for url in (e.get("prebuilt") or {}).values():
                write_bwa_index(root, url, fasta, work / f"bwa-{e['name']}")
        elif e.get("prepare") == "gene-table":
            ref = e["reference"]
            truth.setdefault("gene_tables", {})[e["name"]] = ref
    for e in load_manifests(manifests):
        if e.get("set") == "production" and e.get("prepare") == "gene-table":
            genes = truth["genes"][e["reference"]]
            chrom = "17" if e["reference"] == "GRCh38" else "11"
            write_gene_gff(root, e["source"], 9606 if chrom == "17" else 10090,
                           {genes[0]["accession"]: chrom}, genes)
        elif e.get("set") == "production" and e.get("prepare") == "gtf":
            truth.setdefault("gtf", {})[e["reference"]] = e["source"]
            write_gtf(root, e["source"], truth["genomes"][e["reference"]]["seqid"],
                      truth["genes"][e["reference"]],
                      "gencode" if "gencode" in e["source"] else "refseq")
    if index:
        write_celltypist(root, CELLTYPIST_INDEX, index)
    write_md5_lists(root)
    return truth
