"""The reference-suite runner (``oracles/reference_suite/run.py``): what it unpacks from an sdist,
how it reads pytest's report, and which failures it calls unexpected. (The suite itself needs
the reference's sdist and ~4 minutes: it is run by hand, not here.)"""

from __future__ import annotations

import io
import pathlib
import runpy
import tarfile

import pytest

_SUITE = pathlib.Path(__file__).resolve().parent.parent / "oracles" / "reference_suite"
_RUNNER = runpy.run_path(str(_SUITE / "run.py"))
compare = _RUNNER["compare"]
expected_patterns = _RUNNER["expected_patterns"]
failures = _RUNNER["failures"]
adapt = _RUNNER["adapt"]
unpack = _RUNNER["unpack"]


def _sdist(path: pathlib.Path, files: dict[str, bytes]) -> pathlib.Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_unpack_takes_only_the_top_level_tests_and_lays_the_standins_over_them(tmp_path):
    sdist = _sdist(tmp_path / "ref.tar.gz", {
        "pkg-1.0/tests/test_one.py": b"def test_one(): pass\n",
        "pkg-1.0/tests/conftest.py": b"raise SystemExit('the reference has none')\n",
        "pkg-1.0/tests/data/blob.bin": b"\0",
        "pkg-1.0/streaming/__init__.py": b"",
    })
    work = tmp_path / "work"
    unpack(sdist, work)
    tests = work / "tests"
    assert (tests / "test_one.py").read_bytes() == b"def test_one(): pass\n"
    assert not (tests / "data").exists() and not (work / "streaming").exists()
    # The stand-ins replace what the sdist lacks (or holds in their place).
    assert (tests / "conftest.py").read_text() == \
        (_SUITE / "standins" / "tests" / "conftest.py").read_text()
    for name in ("__init__.py", "datasets.py", "distributed.py", "utils.py"):
        assert (tests / "common" / name).is_file()
    assert (work / "stubs" / "google" / "cloud" / "storage.py").is_file()
    assert "world_size" in (work / "pytest.ini").read_text()


_MODULE = """\
import pytest


@pytest.mark.usefixtures('other')
@pytest.fixture()
def thing():
    return 1


@pytest.mark.skip(
    'hangs in CI (see (their) tracker)')
class TestRanks:
    @pytest.mark.skip('flaky')
    @pytest.mark.world_size(2)
    def test_a(self):
        pass

    @pytest.mark.skipif(True, reason='kept')
    def test_b(self):
        pass
"""


def test_adapt_drops_marks_on_fixtures_and_with_unskip_the_skip_marks():
    plain = adapt(_MODULE)
    assert "@pytest.mark.usefixtures('other')" not in plain  # (pytest 8 refuses it)
    assert plain.replace("@pytest.fixture()", "@pytest.mark.usefixtures('other')\n"
                         "@pytest.fixture()", 1) == _MODULE
    unskipped = adapt(_MODULE, unskip=True)
    assert "mark.skip(" not in unskipped and "hangs in CI" not in unskipped
    assert "@pytest.mark.skipif(True, reason='kept')" in unskipped
    assert "    @pytest.mark.world_size(2)\n    def test_a(self):" in unskipped
    compile(unskipped, "module.py", "exec")  # still valid Python


def test_unpack_refuses_an_sdist_without_tests(tmp_path):
    sdist = _sdist(tmp_path / "ref.tar.gz", {"pkg-1.0/setup.py": b""})
    with pytest.raises(RuntimeError, match="no tests/test_"):
        unpack(sdist, tmp_path / "work")


def test_failures_counts_what_ran_and_names_what_failed(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.test_a" name="test_ok"/>'
        '<testcase classname="tests.test_a" name="test_bad[1]"><failure message="x"/></testcase>'
        '<testcase classname="tests.test_b.TestC" name="test_err"><error message="y"/>'
        '</testcase>'
        '<testcase classname="tests.test_b" name="test_skip"><skipped message="z"/></testcase>'
        '</testsuite></testsuites>')
    ran, failed = failures(report)
    assert ran == 3
    assert failed == ["tests.test_a::test_bad[1]", "tests.test_b.TestC::test_err"]


def test_compare_names_unexpected_failures_and_stale_patterns():
    failed = ["tests.test_a::test_bad[1]", "tests.test_a::test_bad[2]", "tests.test_b::test_new"]
    expected = [("tests.test_a::test_bad[[]*", "why"), ("tests.test_c::test_fixed", "why"),
                ("tests.test_d::test_race", "flaky: it may pass")]
    unexpected, unused = compare(failed, expected)
    assert unexpected == ["tests.test_b::test_new"]
    assert unused == ["tests.test_c::test_fixed"]  # (a flaky one that passed is not stale)


def test_the_expected_list_is_patterns_each_with_its_reason(tmp_path):
    entries = expected_patterns(_SUITE / "expected.txt")
    assert len(entries) > 10
    for pattern, reason in entries:
        assert pattern.startswith("tests.test_") and "::" in pattern, pattern
        assert reason, f"no reason given for {pattern}"
    listed = tmp_path / "expected.txt"
    listed.write_text("# a comment\n\ntests.test_x::test_y*  # why # and more\n  # indented\n")
    assert expected_patterns(listed) == [("tests.test_x::test_y*", "why # and more")]
