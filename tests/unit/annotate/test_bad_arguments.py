"""`biotool call` on hostile arguments: bounded reads of @FILE and stdin, JSON that would exhaust
the parser or the interpreter, numbers that are not numbers, and a position outside the gene."""

from __future__ import annotations

import os

import pytest

from biotool_testing.contract import error_line


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_args_from_a_device_are_refused_without_reading(biotool, path):
    error_line(biotool("call", "seq_stats", f"@{path}", timeout=30), path, "device", alone=True)


def test_args_from_a_fifo_do_not_hang(biotool, tmp_path):
    fifo = tmp_path / "args.fifo"
    os.mkfifo(fifo)
    error_line(biotool("call", "seq_stats", f"@{fifo}", timeout=30), str(fifo), "FIFO", alone=True)


def test_args_file_over_the_bound_is_refused_by_size(biotool, tmp_path):
    from biotool.annotate.cli import MAX_ARGS_BYTES

    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(10 * 2 ** 30)  # sparse: 10 GB that take no disk
    error_line(biotool("call", "seq_stats", f"@{big}", timeout=30), str(big),
               f"{MAX_ARGS_BYTES:,}", alone=True)


def test_args_from_stdin_over_the_bound_are_refused(biotool_env, tmp_path):
    import subprocess
    import sys

    big = tmp_path / "stdin.bin"
    with open(big, "wb") as fh:
        fh.truncate(10 * 2 ** 30)  # 10 GB on stdin: read only up to the bound, then refused
    with open(big, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "biotool", "call", "seq_stats", "-"],
                              stdin=stdin, capture_output=True, env=biotool_env, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"stdin is over the limit" in proc.stderr and proc.stderr.count(b"\n") == 1


@pytest.mark.parametrize("name,content,needle", [
    ("empty.json", b"", "is empty"),
    ("bom.json", b'\xef\xbb\xbf{"sequence": "ACGT"}', "byte-order mark"),
    ("utf16.json", '{"sequence": "ACGT"}'.encode("utf-16"), "UTF-16"),
])
def test_args_files_that_are_not_plain_json_name_the_file(biotool, tmp_path, name, content,
                                                           needle):
    f = tmp_path / name
    f.write_bytes(content)
    error_line(biotool("call", "seq_stats", f"@{f}"), str(f), needle, alone=True)


def test_deep_nesting_is_bad_input_not_a_crash(biotool):
    deep = '{"sequence": "ACGT", "x": ' + "[" * 10000 + "]" * 10000 + "}"
    error_line(biotool("call", "seq_stats", deep), "nested too deeply", alone=True)
    error_line(biotool("call", "seq_stats", "-", input=deep), "nested too deeply", alone=True)
    # Within the parser's reach but past the bound: named by its field.
    error_line(biotool("call", "seq_stats", '{"sequence": "ACGT", "x": ' + "[" * 40 + "]" * 40 + "}"),
               "args.x", "nested more than 32", alone=True)


def test_huge_integers_name_their_field(biotool):
    error_line(biotool("call", "translate", '{"sequence": "ATGGCC", "table": ' + "9" * 5000 + "}"),
               "args.table", "5,000 digits", alone=True)
    error_line(biotool("call", "variant_annotate", '{"reference": "MN908947.3", "position": '
                       + "9" * 5000 + ', "ref": "A", "alt": "G"}'), "args.position", alone=True)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_name_their_field(biotool, value):
    error_line(biotool("call", "primer_tm",
                       '{"sequence": "ACGTACGTACGTACGTAC", "na_mM": ' + value + "}"),
               "args.na_mM", alone=True)


def test_lone_surrogate_is_bad_input(biotool):
    error_line(biotool("call", "seq_stats", '{"sequence": "AC\\ud800GT"}'), "args.sequence",
               "Unicode", alone=True)


def test_ordinary_numbers_still_pass(call):
    out = call("primer_tm", {"sequence": "ACGTACGTACGTACGTAC", "na_mM": 50.0, "mg_mM": 1.5})
    assert out["tm_nearest_neighbor_c"] > 0


@pytest.mark.parametrize("position", [100, 25500])
def test_variant_position_outside_the_named_gene_is_exit_2(biotool, position):
    res = biotool("call", "variant_annotate",
                  f'{{"gene": "S", "reference": "MN908947.3", "position": {position}, '
                  '"ref": "A", "alt": "G"}')
    error_line(res, "args.position", f"{position} is outside the CDS of S", "21563-25384",
               alone=True)


def test_variant_position_inside_the_named_gene_still_annotates(call):
    out = call("variant_annotate", {"gene": "S", "position": 23403, "ref": "A", "alt": "G"})
    assert out["annotations"][0]["hgvs_p"] == "p.Asp614Gly"
