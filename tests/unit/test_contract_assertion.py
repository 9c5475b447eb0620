"""biotool_testing.contract.error_line, the refusal assertion the family tests share, fails on
each breach it is there to catch (so a passing family test means something)."""

import pytest

from biotool_testing.contract import error_line
from biotool_testing.ran import Ran

LINE = "biotool: error: --fastq x.fq: empty"


def test_a_refusal_on_contract_gives_its_error_line():
    assert error_line(Ran(2, "", LINE + "\n"), "x.fq", alone=True) == LINE
    assert error_line(Ran(3, "", "biotool: aligning\n" + LINE + "\n"), code=3) == LINE
    assert error_line(Ran(2, "", "molperceive: error: bad\n"), prog="molperceive") \
        == "molperceive: error: bad"


@pytest.mark.parametrize("ran,kw", [
    (Ran(4, "", LINE + "\n"), {}),                                         # another exit code
    (Ran(2, "{}", LINE + "\n"), {}),                                       # anything on stdout
    (Ran(2, "", "Traceback (most recent call last):\n" + LINE + "\n"), {}),
    (Ran(2, "", "warning: from a library\n" + LINE + "\n"), {}),           # a foreign line
    (Ran(2, "", LINE + "\nbiotool: after the error\n"), {}),               # not the last line
    (Ran(2, "", "biotool: aligning\n" + LINE + "\n"), {"alone": True}),    # not the only line
    (Ran(2, "", LINE + "\n"), {"prog": "molperceive"}),                    # another program's
])
def test_each_breach_fails_the_assertion(ran, kw):
    with pytest.raises(AssertionError):
        error_line(ran, **kw)


def test_a_culprit_the_line_does_not_name_fails_it():
    with pytest.raises(AssertionError):
        error_line(Ran(2, "", LINE + "\n"), "y.fq")
