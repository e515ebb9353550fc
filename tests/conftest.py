"""Shared pytest fixtures."""

from __future__ import annotations

import pathlib

import pytest

ORACLES = pathlib.Path(__file__).resolve().parent.parent / "oracles" / "fixtures"


@pytest.fixture(scope="session")
def oracles() -> pathlib.Path:
    """The directory of oracle fixtures written by ``oracles/generate.py``."""
    return ORACLES
