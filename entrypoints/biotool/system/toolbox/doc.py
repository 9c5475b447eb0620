"""What agents read of the toolbox: the `tools` section of `biotool list`, and TOOLS.md (from
the image's versions, or from the Dockerfile's pins and a lock, for docs/)."""

from __future__ import annotations

import re

from biotool.system.toolbox.manifest import Toolbox, coverage, load, names

DOC = "TOOLS.md"  # under BIOTOOL_HOME in the image, and in docs/


def summary() -> dict:
    """The `tools` section of `biotool list`: every command name (utilities aside) and R
    library, and how many Python modules, kept under the output bound; the modules' names and
    every version are `biotool version`'s, and what each is for, where its data lives and what
    is absent on purpose are TOOLS.md's."""
    from biotool import staging

    box = load()
    return {
        "commands": " ".join(n for fam, tools in box.families().items() if fam != "utilities"
                             for t in tools for n in names(t)),
        "r_libraries": " ".join(box.r_libraries),
        "python": f"{len(box.python)} modules (scanpy, scvi, pydeseq2, gseapy, ...): biotool version",
        "doc": f"{staging.home() / DOC}: each one's use and data, what is absent",
    }


def _cell(text: str) -> str:
    """Text in a Markdown table cell: a `|` would start another column."""
    return text.replace("|", "\\|")


def markdown(deb: dict[str, str], box: Toolbox | None = None,
             pip: dict[str, str] | None = None) -> str:
    """TOOLS.md from the toolbox, {Debian package: version} and {PyPI distribution: version}
    (the commands the Python environment installs)."""
    box = box or load()
    pip = pip or {}
    lines = [
        "# The toolbox",
        "",
        "Generated from `entrypoints/biotool/system/toolbox/toolbox.toml` "
        "(`python -m biotool.system.toolbox markdown`); in the image at `/opt/biotool/TOOLS.md`.",
        "Nothing can be installed in this sandbox: what is listed here is what there is. "
        "`biotool list` lists the same names, `biotool version` their versions, and "
        "`biotool doctor` checks that each starts.",
        "",
        "Data the tools need: `biotool references` lists the staged references with every "
        "index (faidx, bwa, bowtie2, hisat2, minimap2) and its path, and the gene annotation GTF "
        "staged on each genome's sequence names (`annotation`); `biotool list` gives every "
        "staged database's path and a `use` line (in production images: Swiss-Prot for blastp "
        "and diamond, a Kraken 2 database); `biotool index --reference "
        "NAME --kind KIND` gives the path of one index, building it into the cache first when it "
        "is not staged (bounded by `--timeout`). Example inputs are under `/opt/biotool/samples`.",
        "",
    ]
    for fam, tools in box.families().items():
        lines += [f"## {fam}", "", "| command | version (Debian package) | what | data |",
                  "|---|---|---|---|"]
        for t in tools:
            cmd = " / ".join(f"`{n}`" for n in names(t))
            ver = (f"{pip.get(t.pip, '?')} (PyPI {t.pip})" if t.pip
                   else f"{deb.get(t.package, '?')} ({t.package})")
            lines.append(f"| {cmd} | {ver} | {_cell(t.what)} | {_cell(t.data)} |")
        lines.append("")
    lines += ["## R", "", f"R {deb.get(box.r_package, '?')} (`R`, `Rscript`) with "
              + ", ".join(f"{lib} ({deb.get(pkg, '?')})"
                          for lib, pkg in zip(box.r_libraries, box.r_packages))
              + ". `library()` of each works as any user on the read-only root.", ""]
    lines += ["## Python", "", "In `/opt/venv` (the `python` on PATH), pinned in "
              "`image/requirements-*.lock`: " + ", ".join(f"`{m}` ({d})" for m, d in
                                                          box.python.items()) + ".", ""]
    if box.data:
        lines += ["## Staged data for the tools", "", "| what | path | from (Debian package) |",
                  "|---|---|---|"]
        lines += [f"| {_cell(d.what)} | `{d.path}` | {deb.get(d.package, '?')} ({d.package}) |"
                  for d in box.data]
        lines.append("")
    lines += ["## Deliberately not here", "", "| what | why | what covers the need |",
              "|---|---|---|"]
    lines += [f"| {_cell(a.name)} | {_cell(a.why)} | {_cell(a.instead)} |" for a in box.absent]
    if box.union:
        lines += ["", "## Against what agents' evaluation environments carry", "",
                  "The union of the command-line tools, R libraries and Python modules of the "
                  "environments agents are evaluated in (issue 34), checked as an agent reaches "
                  "each: here before the second round, here now, and the names still absent "
                  "(each a row above).", "",
                  "| kind | union | before | now | absent |", "|---|---|---|---|---|"]
        for kind, c in coverage(box).items():
            lines.append(f"| {kind} | {c['union']} | {c['before']} | {c['now']} "
                         f"({100 * c['now'] // c['union']}%) | "
                         + ", ".join(f"`{n}`" for n in c["absent"] + c["gap"]) + " |")
        union, now = (sum(c[k] for c in coverage(box).values()) for k in ("union", "now"))
        lines.append(f"| all | {union} | {sum(c['before'] for c in coverage(box).values())} | "
                     f"{now} ({100 * now // union}%) | |")
    return "\n".join(lines) + "\n"


def dockerfile_pins(text: str) -> dict[str, str]:
    """{package: version} of every `pkg=version` pin in a Dockerfile's `apt-get install` and
    `apt-get download` arguments."""
    joined = text.replace("\\\n", " ")
    args = " ".join(m.split("&&")[0] for m in re.split(r"apt-get (?:install|download)", joined)[1:])
    return dict(re.findall(r"(?<![\w.+=-])([a-z0-9][a-z0-9.+-]*)=([0-9][\w.+:~-]*)", args))


def lock_versions(text: str, dists: set[str]) -> dict[str, str]:
    """{distribution: version} of `dists` in a lock file's `name==version` lines."""
    canon = {re.sub(r"[-_.]+", "-", d).lower(): d for d in dists}
    out = {}
    for line in text.splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep and re.sub(r"[-_.]+", "-", name).lower() in canon:
            out[canon[re.sub(r"[-_.]+", "-", name).lower()]] = version
    return out
