"""Fixtures for the simulator tests."""

from pathlib import Path

import pytest
from sim_data import SRTM_DIR


@pytest.fixture
def srtm_dir() -> Path:
    """The shared SRTM test data; the test is skipped, visibly, where it is missing."""
    if not SRTM_DIR.is_dir():
        pytest.skip(f"SRTM test data not found at {SRTM_DIR.resolve()}")
    return SRTM_DIR
