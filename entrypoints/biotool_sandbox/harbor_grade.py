"""The offline grader of a Harbor task (docs/harbor.md): the image as the separate verifier.

`python -m biotool_sandbox.harbor_grade --key KEY --answer ANSWER --audit STORE --out DIR`
reads the task's answer key, the agent's answer (an artifact of the agent's container) and the
egress audit store of the agent phase (an artifact Harbor copies from the `egress` service
after stopping `main`, so the agent never had a way to write it), and writes

  DIR/reward.json   numbers only (Harbor's contract): `reward` and every component;
  DIR/grade.json    why: each field expected and given, the audit's records and counts, the
                    rules applied, and the sha256 of every input (a re-grade reads the same).

Deterministic and offline: no clock of its own (test.sh hands it the verifier's start as
`--not-after`, an input like the others), no network, no randomness. An infrastructure failure
(no key, the audit missing, unreadable or incomplete, the verifier's own staged input
unreadable) is `infrastructure_error: 1` with no `reward` and no components, never an agent's 0.
Everything read from the agent's files is bounded before it is parsed (MAX_AGENT_FILE bytes,
a regular file, MAX_DEPTH levels of JSON) and any failure to read or score it is the agent's 0
with the reason in grade.json: the grader is total on agent input.

A drawn task (its key names a `draw`) had its ground truth drawn at environment start outside
`main` (biotool_sandbox.harbor_draw); `--truth` is that draw's file, collected from the draw
service like the audit, and each field marked `{"drawn": RULE}` is checked by RULE against the
truth's value. A missing or unreadable truth is an infrastructure error.

Two checks a task's key may add: `molperceive` fields are scored by MolPerceive's own rule
(molperceive.score.correct) against the stored label, each recomputed under the verifier's
RDKit so drift is reported; `evidence` asks for the JSON output of the biotool command that
found the answer, beside it, from this image build on the staged input (docs/harbor.md says
what that can and cannot tell).
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import math
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from commandline.errors import EXIT_FAILED

from . import harbor_audit
from .audit import report, store_holds, store_started

GRADER_VERSION = 4
# What the verifier reads of an agent's file, at most: an answer or a tool's JSON output is a
# few KB; anything bigger is refused unread (a 120 MB answer must not cost the verifier's RAM).
MAX_AGENT_FILE = 1 << 20
MAX_DEPTH = 32      # JSON nesting levels read from an agent's file (json recurses per level)
SHOWN = 200         # characters of an agent's value repeated in grade.json
# What the egress audit of the agent phase may show, unless the key says otherwise: no denied
# attempt (a host off the allowlist, plain HTTP, an accession as a BLAST query), no record the
# gate could not parse, no tunnel left without its close record. A paced request (the gate's
# 429: wait your turn) is never one: it is the queue's doing, and nothing left the host.
DEFAULT_EGRESS = {"max_denied": 0, "max_unrecorded": 0, "max_allowed": None, "min_allowed": 0}


class InfrastructureError(Exception):
    """The grade cannot be given (not the agent's doing): reported, never scored."""


@dataclass(frozen=True)
class Inputs:
    key: dict
    answer: object          # the parsed answer; None when missing or not JSON
    answer_problem: str | None
    store: str
    digests: dict
    evidence: object = None  # the tool's output the key asks for; None when not asked or absent
    evidence_problem: str | None = None
    not_after: float | None = None  # the verifier's start: no record of the run is later
    truth: dict | None = None       # a drawn task's truth values (harbor_draw), by field
    drawn_reads: set[str] | None = None  # digests of the reads a drawn search task's draw wrote


def _sha256(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text nests past `limit` (brackets outside strings), told without parsing:
    the parser and every walk of its result recurse once per level."""
    depth, in_string, escaped = 0, False, False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:    # backslash
                escaped = True
            elif byte == 0x22:    # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _read_bounded(path: Path, what: str) -> tuple[bytes | None, str | None]:
    """(at most MAX_AGENT_FILE bytes of a regular file, why not): never follows a link, never
    waits on a FIFO, never reads what is over the cap."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, f"no {what}: {path.name} was not written"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, f"the {what} {path.name} is a symbolic link, not a file"
        return None, f"the {what} cannot be read ({exc.strerror or exc})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"the {what} {path.name} is not a regular file"
        if st.st_size > MAX_AGENT_FILE:
            return None, (f"the {what} is {st.st_size} bytes, over the {MAX_AGENT_FILE} the "
                          "verifier reads")
        chunks, left = [], MAX_AGENT_FILE + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        return None, f"the {what} cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if len(data) > MAX_AGENT_FILE:  # grew since its size was read
        return None, f"the {what} is over the {MAX_AGENT_FILE} bytes the verifier reads"
    return data, None


def _read_object(path: Path, what: str) -> tuple[object, str | None, bytes | None]:
    """(parsed JSON object or None, why not, the bytes read): the agent's files, whose
    absence or damage is the agent's doing."""
    data, problem = _read_bounded(path, what)
    if data is None:
        return None, problem, None
    if _too_deep(data):
        return None, f"the {what} nests deeper than {MAX_DEPTH} levels", data
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # ValueError: bad UTF-8, JSON, huge integers
        return None, f"the {what} is not JSON ({_shown(str(exc))})", data
    if not isinstance(doc, dict):
        return None, f"the {what} is not a JSON object", data
    return doc, None, data


def _shown(value):
    """An agent's value as grade.json repeats it: a scalar as it is (a non-finite number as
    text), text and anything nested as bounded text."""
    if value is None or isinstance(value, bool) or isinstance(value, int) and \
            abs(value) < 10 ** 18:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


# The truth's list of the drawn reads' sequences, for a task whose search is of them
# (draws.taxonomy.searched writes it).
SEARCH_READS = "search_reads"
# The rules a drawn field may name; the truth gives the value each compares against.
DRAWN_RULES = ("equals", "equals_ci", "approx", "set_ci", "molperceive")


def read_truth(path: Path | None) -> tuple[dict, bytes]:
    """A draw's truth values and the file's bytes: written by the draw service, never by the
    agent, so anything wrong with it is the infrastructure's."""
    if path is None:
        raise InfrastructureError("the task is drawn but the grader was given no --truth")
    try:
        data = path.read_bytes()
        doc = json.loads(data)
    except OSError as exc:
        raise InfrastructureError(f"the draw's truth {path} was not collected from the draw "
                                  f"service ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InfrastructureError(f"the draw's truth {path} is not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("values"), dict):
        raise InfrastructureError(f"the draw's truth {path} holds no values")
    return doc["values"], data


def resolve_fields(key: dict, truth: dict | None) -> dict:
    """The key's fields with every drawn rule given its truth value: {"drawn": "equals"} and
    a truth of 12 is {"equals": 12}; {"drawn": "molperceive", "label": F} takes the truth's
    {"smiles", "stored"}. InfrastructureError where the key and the truth do not fit."""
    fields = {}
    for name, rule in key["fields"].items():
        if not (isinstance(rule, dict) and "drawn" in rule):
            fields[name] = rule
            continue
        kind = rule["drawn"]
        if kind not in DRAWN_RULES:
            raise InfrastructureError(f"the answer key's field {name}: drawn rule {kind!r} is "
                                      f"none of {', '.join(DRAWN_RULES)}")
        if truth is None or name not in truth:
            raise InfrastructureError(f"the draw's truth has no value for field {name}")
        rest = {k: v for k, v in rule.items() if k != "drawn"}
        value = truth[name]
        if kind == "molperceive":
            if not (isinstance(value, dict) and {"smiles", "stored"} <= set(value)):
                raise InfrastructureError(f"the draw's truth for {name} is not a stored label")
            fields[name] = {"molperceive": rest["label"], "smiles": value["smiles"],
                            "stored": value["stored"]}
        else:
            fields[name] = {kind: value, **rest}
    return fields


def read_inputs(key_path: Path, answer_path: Path, audit_path: Path,
                not_after: float | None = None, truth_path: Path | None = None) -> Inputs:
    try:
        key_bytes = key_path.read_bytes()
        key = json.loads(key_bytes)
    except (OSError, ValueError) as exc:
        raise InfrastructureError(f"the answer key {key_path} cannot be read ({exc})") from None
    if not isinstance(key, dict) or not isinstance(key.get("fields"), dict):
        raise InfrastructureError(f"the answer key {key_path} has no fields")
    try:
        store_bytes = audit_path.read_bytes()
    except OSError as exc:
        raise InfrastructureError(f"the egress audit {audit_path} was not collected from the "
                                  f"egress service ({exc.strerror or exc})") from None
    store = store_bytes.decode("utf-8", "replace")
    if not store.strip():
        raise InfrastructureError(f"the egress audit {audit_path} is empty (the gate writes its "
                                  "header before it serves anything)")
    if "proxy" not in store_holds(store):
        raise InfrastructureError("the egress audit holds the gate's records only: Squid's "
                                  "denials are not in it, so the agent phase cannot be judged")
    answer, problem, answer_bytes = _read_object(answer_path, "answer")
    digests = {"key": _sha256(key_bytes), "answer": _sha256(answer_bytes),
               "audit": _sha256(store_bytes)}
    evidence, evidence_problem = None, None
    if key.get("evidence"):
        evidence, evidence_problem, evidence_bytes = _read_object(
            answer_path.parent / key["evidence"]["artifact"], "evidence")
        digests["evidence"] = _sha256(evidence_bytes)
    truth = None
    if key.get("draw"):
        truth, truth_bytes = read_truth(truth_path)
        digests["truth"] = _sha256(truth_bytes)
        key = {**key, "fields": resolve_fields(key, truth)}
    drawn_reads = search_reads(key, truth)
    if not_after is not None:
        digests["not_after"] = not_after  # an input too: a re-grade passes the same
    return Inputs(key, answer, problem, store, digests, evidence, evidence_problem, not_after,
                  truth, drawn_reads)


def search_reads(key: dict, truth: dict | None) -> set[str] | None:
    """The digests of the drawn reads a search task's audit must show searched (of the
    truth's SEARCH_READS, the reads' sequences), None where the task searches a staged file;
    InfrastructureError where the truth lacks them."""
    if (key.get("search") or {}).get("reads") != harbor_audit.DRAWN:
        return None
    listed = (truth or {}).get(SEARCH_READS)
    if not (isinstance(listed, list) and listed and all(isinstance(d, str) for d in listed)):
        raise InfrastructureError(f"the draw's truth has no {SEARCH_READS} for the task's search "
                                  "of the drawn reads")
    return harbor_audit.read_digests(listed)


def check_field(rule: dict, given) -> tuple[bool, str]:
    """One field against its rule: equals (exact, numbers as numbers), equals_ci (text, case
    and surrounding space ignored), approx (a number within tol), set_ci (a list of texts as
    a set, case and surrounding space ignored), molperceive (MolPerceive's scoring rule for
    that label field against the stored label)."""
    if given is None:
        return False, "missing"
    if "molperceive" in rule:
        from molperceive import score

        return score.correct(rule["molperceive"], given, rule["stored"]), \
            f"expected {rule['stored']!r} (molperceive's rule for {rule['molperceive']})"
    if "equals" in rule:
        want = rule["equals"]
        if isinstance(want, bool) or not isinstance(want, (int, float)):
            return given == want, f"expected {want!r}"
        ok = isinstance(given, (int, float)) and not isinstance(given, bool) and given == want
        return ok, f"expected {want!r}"
    if "equals_ci" in rule:
        want = str(rule["equals_ci"]).strip().casefold()
        return isinstance(given, str) and given.strip().casefold() == want, \
            f"expected {rule['equals_ci']!r} (case ignored)"
    if "set_ci" in rule:
        want = {str(w).strip().casefold() for w in rule["set_ci"]}
        ok = isinstance(given, list) and all(isinstance(g, str) for g in given) \
            and {g.strip().casefold() for g in given} == want
        return ok, f"expected the set {sorted(rule['set_ci'])!r} (order and case ignored)"
    if "approx" in rule:
        want, tol = float(rule["approx"]), float(rule.get("tol", 0))
        ok = isinstance(given, (int, float)) and not isinstance(given, bool) \
            and math.isfinite(given) and abs(given - want) <= tol
        return ok, f"expected {want} +/- {tol}"
    raise InfrastructureError(f"the answer key's rule {rule!r} names no known check")


def _agents_fault(exc: Exception) -> bool:
    """Whether an exception raised while scoring agent input is the input's doing (a value of
    a type or form no rule expects), not the verifier's (its key, its own files, its code's
    imports)."""
    return not isinstance(exc, (InfrastructureError, harbor_audit.StagedInputError,
                                ImportError, MemoryError))


def grade_answer(key: dict, answer: dict | None, problem: str | None) -> dict:
    fields = {}
    for name, rule in key["fields"].items():
        given = answer.get(name) if answer is not None else None
        try:
            ok, expected = check_field(rule, given)
        except Exception as exc:  # noqa: BLE001 - any value the agent wrote is scored, as 0
            if not _agents_fault(exc):
                raise
            ok, expected = False, (f"not scorable ({type(exc).__name__}: "
                                   f"{_shown(str(exc))}); {_expected(rule)}")
        fields[name] = {"ok": bool(ok), "given": _shown(given), "expected": expected}
    passed = sum(f["ok"] for f in fields.values())
    out = {"ok": problem is None and passed == len(fields), "problem": problem,
           "fields": fields, "fields_passed": passed, "fields_total": len(fields)}
    scored = {n: r for n, r in key["fields"].items() if "molperceive" in r}
    if scored:
        out["molperceive"] = grade_molperceive(scored, fields)
    return out


def _expected(rule: dict) -> str:
    for k in ("stored", "equals", "equals_ci", "approx", "set_ci"):
        if k in rule:
            return f"expected {rule[k]!r}"
    return "expected (see the key)"


def grade_molperceive(rules: dict, fields: dict) -> dict:
    """MolPerceive's view of its fields: the share right per label field, and each stored
    label recomputed under this RDKit (molperceive.label), a changed one counted as drift
    (the key is re-derived, as molperceive's score reports it, never silently re-scored)."""
    from molperceive import label

    per_field: dict[str, list[bool]] = {}
    drift = []
    for name, rule in rules.items():
        per_field.setdefault(rule["molperceive"], []).append(fields[name]["ok"])
        now = label.label(rule["smiles"], [rule["molperceive"]]).get("labels", {})
        if now.get(rule["molperceive"]) != rule["stored"]:
            drift.append({"field": name, "stored": rule["stored"],
                          "recomputed": now.get(rule["molperceive"])})
    return {"rdkit": label.rdkit_info(), "drift": drift,
            "fields": {f: round(sum(oks) / len(oks), 4) for f, oks in sorted(per_field.items())}}


def _same(listed, given) -> bool:
    """A listed value and the answer's: text with case ignored (bases), the rest exact."""
    if isinstance(listed, str) and isinstance(given, str):
        return listed.casefold() == given.strip().casefold()
    return listed == given and type(listed) is type(given)


def grade_evidence(rule: dict, evidence, problem: str | None, answer: dict | None) -> dict:
    """The tool output the key asks for beside the answer: biotool's JSON from this image
    build (provenance.image), on the staged reference (its sha256) and the staged reads (the
    sample's name and read count), holding the answer in its `list`. It tells an answer
    written without running the tool here; not one whose output was forged in its shape."""
    from biotool.provenance import provenance

    broken = [problem] if problem else []
    if evidence is not None:
        image = provenance().get("image")
        if not image:
            raise InfrastructureError("the verifier has no image build identity "
                                      "(/etc/biotool/build.json): evidence cannot be checked")
        try:
            broken += _evidence_broken(rule, evidence, answer, image)
        except Exception as exc:  # noqa: BLE001 - a shape biotool never writes: the agent's 0
            if not _agents_fault(exc):
                raise
            broken.append(f"the evidence is not biotool's output ({type(exc).__name__}: "
                          f"{_shown(str(exc))})")
    return {"ok": not broken, "broken": broken, "artifact": rule["artifact"]}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _evidence_broken(rule: dict, evidence: dict, answer: dict | None, image) -> list[str]:
    """What does not hold of the evidence; every value read off it type-checked first."""
    broken = []
    prov = _dict(evidence.get("provenance"))
    if prov.get("image") != image:
        broken.append(f"the evidence is not this image build's output (provenance.image "
                      f"{_shown(prov.get('image'))!r}, this image {image!r})")
    refs = [u for u in _list(prov.get("used")) if isinstance(u, dict)
            and u.get("kind") == "reference"]
    if not any(u.get("sha256") == rule["reference_sha256"] for u in refs):
        broken.append(f"the evidence used no reference with the staged "
                      f"{rule['reference']}'s sha256 {rule['reference_sha256'][:12]}...")
    reads = Path(rule["reads"])
    try:
        with reads.open("rb") as fh:
            n_reads = sum(1 for _ in fh) // 4
    except OSError as exc:
        raise InfrastructureError(f"the staged reads {reads} cannot be read in the "
                                  f"verifier ({exc.strerror or exc})") from None
    samples = _list(evidence.get("samples"))
    if not any(isinstance(s, dict) and s.get("sample") == reads.name
               and s.get("reads_used") == n_reads for s in samples):
        broken.append(f"the evidence is not of the staged reads ({reads.name}, "
                      f"{n_reads} reads used)")
    listed = _list(evidence.get(rule["list"]))
    want = {f: _dict(answer).get(f) for f in rule["match"]}
    if not any(isinstance(item, dict) and all(_same(item.get(f), v) for f, v in want.items())
               for item in listed):
        broken.append(f"the answer {_shown(want)} is not in the evidence's {rule['list']}")
    return broken


def grade_egress(store: str, declared: dict, not_after: float | None = None) -> dict:
    """The audit as `biotool-sandbox audit` reports it (the same parser on the same store),
    judged by the task's declaration; a record the run could not have written breaks it."""
    rules = {**DEFAULT_EGRESS, **declared}
    audit = report(None, None, store, {"running": None, "restarts": None, "oom_killed": None})
    counts = audit["counts"]
    unrecorded = audit["unparsed_lines"] + len(audit["open_tunnels"])
    broken = [f"impossible for this run: {why}" for why in
              harbor_audit.impossible(audit, store_started(store), not_after)]
    if counts["denied"] > rules["max_denied"]:
        denied = [r for r in audit["records"] if r["decision"] == "denied"]
        broken.append(f"{counts['denied']} denied attempt(s), at most {rules['max_denied']} "
                      f"allowed; first: {denied[0].get('host') or denied[0].get('url')} "
                      f"({denied[0].get('reason')})" if denied else
                      f"{counts['denied']} denied attempt(s)")
    if unrecorded > rules["max_unrecorded"]:
        broken.append(f"{unrecorded} request(s) without a whole record (unparsed lines or "
                      "tunnels never closed)")
    if counts["allowed"] < rules["min_allowed"]:
        broken.append(f"{counts['allowed']} allowed request(s); the task needs at least "
                      f"{rules['min_allowed']} (it is answered through NCBI BLAST)")
    if rules["max_allowed"] is not None and counts["allowed"] > rules["max_allowed"]:
        broken.append(f"{counts['allowed']} allowed request(s), at most {rules['max_allowed']}")
    return {"ok": not broken, "broken": broken, "rules": rules, "counts": counts,
            "unrecorded": unrecorded, "audit": audit}


def grade(inputs: Inputs) -> tuple[dict, dict]:
    """(reward.json, grade.json) for readable inputs."""
    answer = grade_answer(inputs.key, inputs.answer, inputs.answer_problem)
    egress = grade_egress(inputs.store, inputs.key.get("egress") or {}, inputs.not_after)
    evidence = grade_evidence(inputs.key["evidence"], inputs.evidence, inputs.evidence_problem,
                              inputs.answer) if inputs.key.get("evidence") else None
    search = harbor_audit.check_search(egress["audit"]["records"], inputs.key["search"],
                                       inputs.drawn_reads) if inputs.key.get("search") else None
    passed = [answer, egress] + [c for c in (evidence, search) if c is not None]
    reward = {
        "reward": 1 if all(c["ok"] for c in passed) else 0,
        "answer": 1 if answer["ok"] else 0,
        "answer_fields": round(answer["fields_passed"] / max(answer["fields_total"], 1), 4),
        "egress_ok": 1 if egress["ok"] else 0,
        "egress_allowed": egress["counts"]["allowed"],
        "egress_denied": egress["counts"]["denied"],
        "egress_paced": egress["counts"]["paced"],
        "egress_errors": egress["counts"]["error"],
        "egress_unrecorded": egress["unrecorded"],
        "infrastructure_error": 0,
    }
    # A task's own components, only where its key declares them (named in grade.json too).
    if evidence is not None:
        reward["evidence_ok"] = 1 if evidence["ok"] else 0
    if search is not None:
        reward["search_ok"] = 1 if search["ok"] else 0
        reward["search_reads"] = search["sample_reads_searched"]
    if "molperceive" in answer:
        for field, share in answer["molperceive"]["fields"].items():
            reward[f"molperceive_{field}"] = share
        reward["molperceive_drift"] = len(answer["molperceive"]["drift"])
    detail = {"status": "graded", "task": inputs.key.get("task"), "grader": GRADER_VERSION,
              "reward": reward, "answer": answer, "egress": egress, "inputs": inputs.digests}
    if inputs.truth is not None:
        detail["drawn"] = inputs.key["draw"]
    if evidence is not None:
        detail["evidence"] = evidence
    if search is not None:
        detail["search"] = search
    return reward, detail


def infrastructure(why: str) -> tuple[dict, dict]:
    return ({"infrastructure_error": 1},
            {"status": "infrastructure_error", "reason": why, "grader": GRADER_VERSION})


def write(out: Path, reward: dict, detail: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # grade.json first: a reward is never there without the reasons behind it.
    for name, doc in (("grade.json", detail), ("reward.json", reward)):
        tmp = out / f".{name}.partial"
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(out / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m biotool_sandbox.harbor_grade",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--key", type=Path, required=True, help="the task's answer key (JSON)")
    parser.add_argument("--answer", type=Path, required=True, help="the agent's answer (JSON)")
    parser.add_argument("--audit", type=Path, required=True,
                        help="the egress audit store collected from the egress service")
    parser.add_argument("--out", type=Path, required=True, help="Harbor's /logs/verifier")
    parser.add_argument("--truth", type=Path, default=None,
                        help="a drawn task's truth, collected from the draw service")
    parser.add_argument("--not-after", type=float, default=None, metavar="EPOCH_S",
                        help="the verifier's start (test.sh: `date +%%s`): an audit record "
                             "dated later is impossible for the run")
    args = parser.parse_args(argv)
    try:
        reward, detail = grade(read_inputs(args.key, args.answer, args.audit, args.not_after,
                                           args.truth))
    except (InfrastructureError, harbor_audit.StagedInputError) as exc:
        reward, detail = infrastructure(str(exc))
    except Exception as exc:  # a grader fault is the harness's, never the agent's 0
        reward, detail = infrastructure(f"the grader failed: {type(exc).__name__}: {exc}")
    write(args.out, reward, detail)
    print(json.dumps(reward, sort_keys=True))
    return EXIT_FAILED if reward.get("infrastructure_error") else 0


if __name__ == "__main__":
    sys.exit(main())
