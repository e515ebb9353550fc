"""Run the reference's own test suite against this project, and compare with what is expected.

mosaicml-streaming 0.13.0's source distribution ships its ``tests/`` but not the helpers they
import (``tests/conftest.py``, ``tests/common``); ``standins/`` holds this project's own stand-ins
for those (fixtures, the datasets its tests write, a ``DistributedTest`` that runs a test's ranks
as gloo processes on 127.0.0.1), and for ``google.cloud.storage``, which its tests import at
module level. The stand-in shadows the real package when the test extras installed it (gcsfs
brings it): gcsfs then fails to import and the tests that would reach Google through it fail at
once, where with the real package each spends minutes in gcsfs's retries against the harness's
loopback-only network. Nothing of the reference is kept in this repository: the sdist is
downloaded (``pip download``) into a cache and its tests are unpacked into a work directory for
each run.

    python oracles/reference_suite/run.py                # the whole suite, ~3 minutes
    python oracles/reference_suite/run.py -- tests/test_reader.py -x  # to pytest
    python oracles/reference_suite/run.py --run-skipped -- tests/test_distributed.py

It runs under the interpreter that runs it (the project's venv: ``streaming`` is this project,
with its test extras, which include moto and boto3). Every test that fails must match a pattern
in ``expected.txt``, each with the reason it fails by design or in the harness; the run exits
with status 1 if another fails, and names the patterns that matched nothing (fixed since, to be
removed; but those marked flaky). Not run: ``test_barrier.py`` and ``test_shared.py`` (the
reference's shared-memory internals, which this project replaces, see
``docs/compatibility.md``) and ``test_streaming_remote.py`` (public datasets on remote object
stores).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE = "mosaicml-streaming==0.13.0"
SDIST = "mosaicml_streaming-0.13.0.tar.gz"
NOT_RUN = ("test_barrier.py", "test_shared.py", "test_streaming_remote.py")
PYTEST_INI = """\
[pytest]
addopts = -m "not daily and not remote" -p no:cacheprovider
markers =
    world_size(n): ranks of a DistributedTest
    daily: the reference's long tests
    remote: tests that need remote object stores
filterwarnings =
    ignore::UserWarning
"""


def fetch_sdist(cache: Path) -> Path:
    """The reference's sdist, downloaded into ``cache`` unless it is there already."""
    path = cache / SDIST
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "-d", str(cache), REFERENCE], check=True)
    if not path.exists():
        raise FileNotFoundError(f"{path}: pip download did not produce the reference's sdist")
    return path


def _without_skip_marks(source: str) -> str:
    """``source`` without its ``@pytest.mark.skip(...)`` decorators (whole lines; ``skipif``
    and the other marks stay)."""
    drop: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        for decorator in getattr(node, "decorator_list", []):
            if ast.unparse(getattr(decorator, "func", decorator)) == "pytest.mark.skip":
                drop.update(range(decorator.lineno, decorator.end_lineno + 1))
    lines = source.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines, 1) if number not in drop)


def adapt(source: str, unskip: bool = False) -> str:
    """A test module's source as today's pytest accepts it: a ``@pytest.mark...`` line right
    above ``@pytest.fixture`` is dropped (pytest 8 refuses marks on fixtures, on which they
    never did anything; ``test_mixing.py`` has one). With ``unskip``, the reference's
    unconditional ``@pytest.mark.skip(...)`` marks are dropped too."""
    if unskip:
        source = _without_skip_marks(source)
    lines = source.splitlines(keepends=True)
    kept = [line for line, after in zip(lines, lines[1:] + [""])
            if not (line.lstrip().startswith("@pytest.mark.")
                    and after.lstrip().startswith("@pytest.fixture"))]
    return "".join(kept)


def unpack(sdist: Path, work: Path, unskip: bool = False) -> None:
    """The sdist's ``tests/*.py`` into ``work/tests`` (:func:`adapt`, with ``unskip``), with the
    stand-ins over them, and the stubbed packages into ``work/stubs``."""
    tests = work / "tests"
    tests.mkdir(parents=True)
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and len(parts) == 3 and parts[1] == "tests" and \
                    parts[2].endswith(".py"):
                source = archive.extractfile(member)
                assert source is not None
                (tests / parts[2]).write_text(adapt(source.read().decode("utf-8"), unskip))
    if not any(tests.glob("test_*.py")):
        raise RuntimeError(f"{sdist}: no tests/test_*.py in it")
    shutil.copytree(HERE / "standins" / "tests", tests, dirs_exist_ok=True)
    shutil.copytree(HERE / "standins" / "google", work / "stubs" / "google")
    (work / "pytest.ini").write_text(PYTEST_INI)


def failures(report: Path) -> tuple[int, list[str]]:
    """How many tests ran, and the ids (``tests.test_x::Class::name[param]``) of those that
    failed or errored, from pytest's JUnit XML ``report``."""
    ran = 0
    failed = []
    for case in ET.parse(report).iter("testcase"):
        if case.find("skipped") is not None:
            continue
        ran += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return ran, failed


def expected_patterns(path: Path) -> list[tuple[str, str]]:
    """The ``(pattern, reason)`` lines of ``expected.txt`` (``pattern  # reason``: ``fnmatch``
    patterns; lines that start with ``#`` are comments)."""
    entries = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pattern, _, reason = line.partition("#")
            entries.append((pattern.strip(), reason.strip()))
    return entries


def compare(failed: list[str], expected: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The failed tests that no pattern expects, and the patterns no failed test matched (but
    those whose reason starts with ``flaky``: they may pass)."""
    unexpected = [test for test in failed
                  if not any(fnmatch.fnmatchcase(test, pattern) for pattern, _ in expected)]
    unused = [pattern for pattern, reason in expected
              if not reason.startswith("flaky")
              and not any(fnmatch.fnmatchcase(test, pattern) for test in failed)]
    return unexpected, unused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", type=Path, help="the reference's sdist (default: downloaded)")
    parser.add_argument("--cache", type=Path,
                        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "shardstream" / "reference-sdist",
                        help="where the downloaded sdist is kept (default: %(default)s)")
    parser.add_argument("--work", type=Path, help="work directory (default: a new temporary one, "
                        "removed after the run)")
    parser.add_argument("--run-skipped", action="store_true",
                        help="also run the tests the reference marks @pytest.mark.skip (its "
                        "multi-rank DataLoader tests, which fail on the reference itself)")
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    args = parser.parse_args()

    sdist = args.sdist or fetch_sdist(args.cache)
    work = args.work or Path(tempfile.mkdtemp(prefix="shardstream-reference-suite-"))
    try:
        unpack(sdist, work, args.run_skipped)
        report = work / "report.xml"
        env = {**os.environ, "PYTHONPATH": str(work / "stubs"),
               "PYSPARK_PYTHON": sys.executable}
        command = [sys.executable, "-m", "pytest", "-q", "-c", "pytest.ini",
                   f"--junitxml={report}"]
        command += [f"--ignore=tests/{name}" for name in NOT_RUN]
        if not any(arg.startswith("tests") for arg in args.pytest_args):
            command.append("tests")
        # (in the work directory: some tests write into the current one)
        subprocess.run(command + args.pytest_args, cwd=work, env=env, check=False)
        if not report.exists():
            print("pytest wrote no report", file=sys.stderr)
            return 2
        ran, failed = failures(report)
        unexpected, unused = compare(failed, expected_patterns(HERE / "expected.txt"))
        print(f"\nreference suite: {ran - len(failed)} of {ran} passed; {len(failed)} failed, "
              f"{len(failed) - len(unexpected)} of them as expected")
        for test in unexpected:
            print(f"UNEXPECTED FAILURE: {test}")
        if not args.pytest_args:  # (a selection leaves patterns unmatched for no reason)
            for pattern in unused:
                print(f"expected to fail, but none did (remove from expected.txt): {pattern}")
        return 1 if unexpected else 0
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
