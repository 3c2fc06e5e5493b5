"""Fixtures for the analytics tests: the demo log (built once) and one local[2] SparkSession."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftwire.analytics.scenario import demo_log


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    demo_log(root).close()
    return root


@pytest.fixture(scope="session")
def spark():
    """A session-scoped local[2] SparkSession with the kraftwire data source registered."""
    if shutil.which("java") is None:
        pytest.skip("Spark tests need a JDK: no `java` on PATH")
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        pytest.skip(f"Spark tests need pyspark[sql] (pip install 'kraftwire[spark]'): {e}")
    from kraftwire.analytics.session import spark_session

    session = spark_session("local[2]", quick_start=True)
    yield session
    session.stop()
