"""The toolbox inside the image, run as an agent runs it (uid 12345, read-only root, no network,
a login shell) on real public data, each checked for a real answer: bowtie2's lambda example,
PyDESeq2's matrix with R DESeq2's recorded results, the ARTIC nanopore reads and their known
10-nt deletion, phiX174's genes, influenza segments. And what an agent sees when it tries to
install something anyway."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from pathlib import Path

import pytest

from biotool_testing.as_agent import AGENT
from biotool_testing.as_agent import fasta as _fasta
from biotool_testing.as_agent import sh as _sh

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LAMBDA = HERE.parent / "unit" / "reads" / "data" / "bowtie2_lambda"
DESEQ = HERE / "data" / "pydeseq2_single_factor"
DEMO = REPO / "refs" / "demo"
FLU = DEMO / "influenza" / "influenza_a_h1n1.fasta"
NO_INSTALL = "installs are not possible in this sandbox"


def test_doctor_starts_every_tool_and_the_names_agents_type_resolve(sandbox):
    # Doctor's own exit is read from its report, so a failure shows the check's detail.
    out = _sh(sandbox, "biotool doctor --no-sha > /tmp/d.json || true; jq -c '.checks[] | "
              "select(.check == \"toolbox\")' /tmp/d.json; for c in iqtree iqtree2 plink "
              "plink1.9 FastTree fasttree trimmomatic featureCounts STAR spades.py macs2 "
              "Rscript fastqc java; do command -v $c; done; test -s /opt/biotool/TOOLS.md; "
              "man bowtie2 | grep -c bowtie2")
    check = json.loads(out.splitlines()[0])
    assert check["ok"] is True and check["required"] is True, check
    assert int(out.splitlines()[-1]) >= 1  # the manual page renders


def test_list_version_and_tools_md_describe_the_toolbox(sandbox):
    out = _sh(sandbox, "biotool list | jq -c .tools; biotool version | jq -c .toolbox; "
              "cat /opt/biotool/TOOLS.md")
    tools, versions, doc = out.split("\n", 2)
    tools, versions = json.loads(tools), json.loads(versions)
    assert {"bowtie2", "iqtree", "featureCounts"} <= set(tools["commands"].split())
    assert versions["tools"]["bowtie2"] == "2.5.0-3+b2", versions["tools"]
    assert all(versions["tools"].values()), versions["tools"]  # every package is installed
    assert all(versions["r"].values()) and versions["r"]["DESeq2"].startswith("1.38")
    assert all(versions["python"].values()), versions["python"]
    assert "| `bowtie2` | 2.5.0-3+b2 (bowtie2) |" in doc and "sra-tools" in doc


def test_bowtie2_and_hisat2_on_bowtie2s_lambda_example(sandbox):
    # The index is built on first use into the cache (lambda is not staged); bwa mem in the
    # same container is the peer. bowtie2's manual reports ~94% of this example aligned.
    out = _sh(sandbox, """
        for k in bowtie2 hisat2; do
            p=$(biotool index --reference /data/lambda_virus.fa --kind $k --timeout 300 | jq -r .path)
            $k -p 2 -x "$p" -U /data/reads_1.fq.gz -S /tmp/$k.sam 2> /tmp/$k.log
            echo "$k $(samtools view -c -F 0x904 /tmp/$k.sam) $(tail -1 /tmp/$k.log)"
        done
        p=$(biotool index --reference /data/lambda_virus.fa --kind bwa | jq -r .path)
        echo "bwa $(bwa mem -v 1 "$p" /data/reads_1.fq.gz | samtools view -c -F 0x904 -)"
        s=$(biotool index --reference phiX174 --kind bowtie2)
        echo "$s" | jq -c '{staged, path}'
        bowtie2-inspect -n "$(echo "$s" | jq -r .path)"
        """, {LAMBDA: "/data"})
    lines = out.splitlines()
    mapped = {l.split()[0]: int(l.split()[1]) for l in lines[:3]}
    rate = {l.split()[0]: float(re.search(r"([\d.]+)% overall", l).group(1)) for l in lines[:2]}
    assert 90.0 <= rate["bowtie2"] <= 98.0, lines[0]
    assert mapped["bowtie2"] >= 0.97 * mapped["bwa"], mapped
    assert mapped["hisat2"] >= 0.80 * mapped["bwa"], mapped  # spliced aligner, end-to-end reads
    staged = json.loads(lines[3])
    assert staged["staged"] is True and staged["path"].startswith("/opt/biotool/")
    assert lines[4].split()[0] == "NC_001422.1"


@pytest.fixture(scope="module")
def flu_reads(tmp_path_factory) -> dict:
    """Reads cut from real influenza transcripts (PR8's segments) in known numbers; the two
    A/California/07/2009 sequences (the same genes, ~80% identical) get none."""
    d = tmp_path_factory.mktemp("flu")
    seqs = _fasta(FLU)
    truth = {"NC_002017.1": 1200, "NC_002018.1": 600, "NC_002016.1": 300, "NC_002023.1": 150}
    rng = random.Random(7)
    with open(d / "reads.fq", "w") as fh:
        for name, n in truth.items():
            s = seqs[name]
            for i in range(n):
                start = rng.randrange(0, len(s) - 100)
                fh.write(f"@{name}_{i}\n{s[start:start + 100]}\n+\n{'I' * 100}\n")
    d.chmod(0o755)
    (d / "reads.fq").chmod(0o644)
    return {"dir": d, "truth": truth, "names": list(seqs)}


def test_kallisto_and_salmon_quantify_real_transcripts(sandbox, flu_reads):
    out = _sh(sandbox, """
        cd /tmp
        k=$(biotool index --reference /flu/influenza_a_h1n1.fasta --kind kallisto | jq -r .path)
        kallisto quant -i "$k" -o kq --single -l 100 -s 1 /reads/reads.fq 2>/dev/null
        s=$(biotool index --reference /flu/influenza_a_h1n1.fasta --kind salmon | jq -r .path)
        salmon quant -q -i "$s" -l A -r /reads/reads.fq -o sq >/dev/null 2>&1
        echo KALLISTO; cat kq/abundance.tsv; echo SALMON; cat sq/quant.sf
        """, {FLU.parent: "/flu", flu_reads["dir"]: "/reads"})
    kal, sal = out.split("KALLISTO\n", 1)[1].split("SALMON\n")
    for table, count in ((kal, "est_counts"), (sal, "NumReads")):
        rows = {r[next(iter(r))]: float(r[count]) for r in csv.DictReader(io.StringIO(table),
                                                                           delimiter="\t")}
        assert set(rows) == set(flu_reads["names"])
        for name in flu_reads["names"]:
            want = flu_reads["truth"].get(name, 0)
            assert abs(rows[name] - want) <= max(3, 0.02 * want), (count, name, rows[name], want)


def test_freebayes_and_ivar_find_the_known_deletion_in_the_artic_reads(sandbox):
    # MT007544 (Australia/VIC01) carries a 10-nt deletion in the 3' UTR at 29749.
    out = _sh(sandbox, """
        cd /tmp
        ref=$(biotool index --reference MN908947.3 --kind minimap2:map-ont | jq -r .fasta)
        minimap2 -ax map-ont "$ref" /opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq \
            2>/dev/null | samtools sort -o a.bam - && samtools index a.bam
        freebayes -f "$ref" --min-alternate-fraction 0.5 a.bam | grep -v '^#' | cut -f2,4,5
        echo DEPTH; mosdepth -n m a.bam && awk '$1 == "total" {print $4}' m.mosdepth.summary.txt
        echo CONSENSUS
        samtools mpileup -aa -A -d 0 -Q 0 a.bam 2>/dev/null | ivar consensus -p cons -m 10 -t 0.5 >/dev/null
        seqkit seq -s -w 0 cons.fa
        """)
    calls, rest = out.split("DEPTH\n")
    depth, consensus = rest.split("CONSENSUS\n")
    # ivar's consensus joins the deletion's flanks: bases 29738-29749, then 29760-29771.
    ref = _fasta(DEMO / "sarscov2" / "MN908947.3.reference.fasta")["MN908947.3"]
    assert ref[29737:29749] + ref[29759:29771] in consensus.strip()
    assert ref[29737:29771] not in consensus.strip()
    dels = [(int(p), r, a) for p, r, a in (l.split("\t") for l in calls.splitlines())
            if len(r) - len(a.split(",")[0]) == 10]
    assert any(29740 <= p <= 29760 for p, _, _ in dels), calls
    assert float(depth.strip()) > 1.0  # mosdepth (which dlopens htslib) ran and measured depth


def test_prodigal_finds_phix174s_genes(sandbox):
    # NC_001422.1's annotation: genes D (390..848), F (1001..2284), G (2395..2922) and
    # H (2931..3917) on the plus strand; prodigal must end a gene at each of their stops.
    out = _sh(sandbox, """
        fa=$(biotool index --reference phiX174 --kind bwa | jq -r .fasta)
        prodigal -p meta -f gff -i "$fa" 2>/dev/null | grep -v '^#' | cut -f4,5,7
        """)
    genes = [l.split("\t") for l in out.splitlines()]
    plus_stops = {int(e) for s, e, strand in genes if strand == "+"}
    assert {848, 2284, 2922, 3917} <= plus_stops, genes
    assert 5 <= len(genes) <= 15, genes


def test_deseq2_and_pydeseq2_reproduce_deseq2s_recorded_results(sandbox):
    out = _sh(sandbox, """
        cd /tmp
        Rscript -e '
          suppressMessages({library(DESeq2); library(edgeR); library(limma); library(tximport)
                            library(ggplot2); library(pheatmap); library(data.table)
                            library(dplyr); library(readr); library(tidyr)})
          counts <- as.matrix(read.csv("/d/test_counts.csv", row.names = 1))
          meta <- read.csv("/d/test_clinical.csv", row.names = 1)
          meta$condition <- factor(meta$condition)
          dds <- suppressMessages(DESeq(DESeqDataSetFromMatrix(counts, meta, ~ condition)))
          write.csv(as.data.frame(results(dds, contrast = c("condition", "B", "A"))), "r.csv")'
        python - <<'EOF'
import pandas as pd
from pydeseq2.dds import DeseqDataSet
from pydeseq2.ds import DeseqStats
counts = pd.read_csv("/d/test_counts.csv", index_col=0).T
meta = pd.read_csv("/d/test_clinical.csv", index_col=0)
dds = DeseqDataSet(counts=counts, metadata=meta, design="~condition", quiet=True)
dds.deseq2()
st = DeseqStats(dds, contrast=["condition", "B", "A"], quiet=True)
st.summary()
st.results_df.to_csv("py.csv")
EOF
        echo R; cat r.csv; echo PY; cat py.csv
        """, {DESEQ: "/d"})
    r_text, py_text = out.split("R\n", 1)[1].split("PY\n")
    recorded = {r[""]: r for r in csv.DictReader((DESEQ / "r_test_res.csv").open())}
    for label, text in (("R DESeq2", r_text), ("pydeseq2", py_text)):
        rows = list(csv.DictReader(io.StringIO(text)))
        got = {r.get("") or r[next(iter(r))]: r for r in rows}
        assert set(got) == set(recorded), label
        for gene, want in recorded.items():
            lfc, want_lfc = float(got[gene]["log2FoldChange"]), float(want["log2FoldChange"])
            assert abs(lfc - want_lfc) <= 0.02 * abs(want_lfc) + 0.005, (label, gene, lfc, want_lfc)
            p, want_p = float(got[gene]["padj"]), float(want["padj"])
            assert (p < 0.05) == (want_p < 0.05), (label, gene, p, want_p)


def test_mafft_iqtree2_and_fasttree_group_the_homologous_influenza_genes(sandbox):
    # PR8's and California/2009's HA, and their NA: both tree builders must split HA from NA.
    seqs = _fasta(FLU)
    keep = {"NC_002017.1": "PR8_HA", "CY121680.1": "Cal07_HA", "NC_002018.1": "PR8_NA",
            "CY121682.1": "Cal07_NA"}
    fasta = "".join(f">{label}\n{seqs[acc]}\n" for acc, label in keep.items())
    out = _sh(sandbox, f"""
        cd /tmp
        printf '%s' '{fasta}' > four.fa
        mafft --quiet --auto four.fa > four.aln
        iqtree --quiet -s four.aln -m GTR+G -seed 1 -T 1 > /dev/null
        cat four.aln.treefile; echo
        FastTree -nt -quiet four.aln 2>/dev/null
        """)
    trees = [t for t in out.split() if t.startswith("(")]
    assert len(trees) == 2, out
    for tree in trees:
        names = re.findall(r"(PR8_HA|Cal07_HA|PR8_NA|Cal07_NA)", tree)
        # An unrooted 4-taxon tree written as (a,b,(c,d)) or ((a,b),(c,d)): the pair inside
        # the innermost parentheses is one side of the split.
        pair = re.search(r"\(([A-Za-z0-9_]+):[^,()]+,([A-Za-z0-9_]+):[^,()]+\)", tree)
        assert pair and len(names) == 4, tree
        assert pair.group(1).split("_")[1] == pair.group(2).split("_")[1], tree


def test_read_qc_and_trimming_tools_on_real_reads(sandbox):
    out = _sh(sandbox, """
        cd /tmp
        fastqc --quiet --extract -o /tmp /opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq
        grep -P '^Total Sequences\\t' MT007544_fastqc/fastqc_data.txt
        trimmomatic SE -phred33 /data/reads_1.fq.gz t.fq.gz SLIDINGWINDOW:4:15 MINLEN:36 2>&1 \
            | grep -o 'Input Reads: [0-9]*'
        fastp -i /data/reads_1.fq.gz -o f.fq.gz -j f.json -h f.html 2>/dev/null
        jq .summary.before_filtering.total_reads f.json
        cutadapt -q 20 -o c.fq.gz /data/reads_1.fq.gz 2>/dev/null | grep -o 'Total reads processed: *[0-9,]*'
        seqkit stats -T /opt/biotool/samples/demo-sarscov2-artic-reads/MT007544.fastq | cut -f4 | tail -1
        trim_galore --cores 1 -o tg /data/reads_1.fq.gz >/dev/null 2>&1
        grep -o 'Total reads processed: *[0-9,]*' tg/reads_1.fq.gz_trimming_report.txt
        bbduk.sh in=/data/reads_1.fq.gz out=b.fq.gz qtrim=rl trimq=10 2>&1 | grep -oP '^Input:\\s+[0-9]+ reads'
        """, {LAMBDA: "/data"})
    lines = out.splitlines()
    assert lines[0] == "Total Sequences\t200"
    assert lines[1] == "Input Reads: 10000"
    assert lines[2] == "10000" and lines[3].replace(",", "").endswith("10000")
    assert lines[4] == "200"
    assert lines[5].replace(",", "").split()[-1] == "10000", lines[5]  # trim_galore
    assert lines[6].split()[-2] == "10000", lines[6]  # bbduk.sh


def test_interval_and_python_packages_work_offline(sandbox):
    # bedtools getfasta of ARTIC V3's first primer (the scheme names its sequence in its
    # publications: ACCAACCAACTTTCGATCTCTTGT); every toolbox Python package imports as the
    # agent, and gseapy's prerank runs on a local gene-set file.
    out = _sh(sandbox, """
        cd /tmp
        fa=$(biotool index --reference MN908947.3 --kind bwa | jq -r .fasta)
        head -1 /demo/sarscov2/nCoV-2019.V3.scheme.bed | cut -f1-3 > p.bed
        bedtools getfasta -fi "$fa" -bed p.bed | tail -1
        python - <<'EOF'
import importlib, json
from biotool.system import toolbox
for m in toolbox.load().python:
    importlib.import_module(m)
import pandas as pd, gseapy
genes = [f"G{i}" for i in range(200)]
rnk = pd.DataFrame({"gene": genes, "score": [200 - i for i in range(200)]})
with open("sets.gmt", "w") as fh:
    fh.write("TOP\\tna\\t" + "\\t".join(genes[:20]) + "\\n")
    fh.write("BOTTOM\\tna\\t" + "\\t".join(genes[-20:]) + "\\n")
res = gseapy.prerank(rnk=rnk, gene_sets="sets.gmt", permutation_num=100, min_size=5,
                     outdir=None, seed=1, threads=1, verbose=False).res2d
print(json.dumps({r["Term"]: float(r["NES"]) for _, r in res.iterrows()}))
EOF
        """, {DEMO: "/demo"})
    primer, nes = out.splitlines()[0], json.loads(out.splitlines()[-1])
    assert primer.upper() == "ACCAACCAACTTTCGATCTCTTGT"
    assert nes["TOP"] > 1.0 and nes["BOTTOM"] < -1.0, nes


@pytest.mark.parametrize("attempt", [
    "pip install numpy",
    "pip3 install --user requests",
    "python -m pip install pysradb",
    "apt-get install -y bowtie",
    "apt update",
    "conda install -c bioconda trinity",
    "mamba install busco",
    "Rscript -e 'install.packages(\"Seurat\")'",
    "R -q -e 'utils::install.packages(\"BiocManager\", repos = \"https://cran-mirror.invalid\")'",
])
def test_installing_anyway_fails_at_once_saying_why(sandbox, attempt):
    ran = sandbox.run(["bash", "-lc", f"timeout 60 {attempt}"], **AGENT)
    assert ran.code not in (0, 124), ran  # refused, and not by the hang guard
    said = ran.stdout + ran.stderr
    if attempt.startswith("python -m pip"):
        # pip itself, with no index to ask: it names the package it could not find.
        assert "No matching distribution found for pysradb" in said, ran
    else:
        assert NO_INSTALL in said and "biotool list" in said, ran
    if attempt.startswith("R"):  # one line, as every shim says it (no "Execution halted")
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"install.packages: {NO_INSTALL}"), ran


def test_read_only_package_commands_still_work(sandbox):
    out = _sh(sandbox, "pip list 2>/dev/null | grep -ci '^pydeseq2 '; apt list --installed "
              "2>/dev/null | grep -c '^bowtie2/'; pip --version | grep -c '^pip '")
    assert out.split() == ["1", "1", "1"], out
