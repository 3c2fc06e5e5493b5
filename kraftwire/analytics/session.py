"""A SparkSession set up for kraftwire analytics, with the ``kraftwire`` data source registered.

Workers must run this interpreter (so they import the same kraftwire and pyarrow), local sessions
bind to loopback, and timestamps are UTC. Any master URL works; ``local[*]`` is the default
(``KRAFTWIRE_SPARK_MASTER`` overrides it).
"""

from __future__ import annotations

import os
import sys
from typing import Any

DEFAULT_MASTER = "local[*]"


def prepare_environment(master: str) -> None:
    """Environment PySpark reads when it launches the JVM and Python workers."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def register(spark: Any) -> None:
    """Make ``spark.read.format("kraftwire")`` available in ``spark``."""
    from kraftwire.analytics.source import KraftwireDataSource

    spark.dataSource.register(KraftwireDataSource)


def spark_session(master: str | None = None, *, app_name: str = "kraftwire-analytics",
                  conf: dict[str, str] | None = None, quick_start: bool = False) -> Any:
    """Get (or create) the session. ``quick_start`` trades JIT quality for a faster JVM start (tests)."""
    master = master or os.environ.get("KRAFTWIRE_SPARK_MASTER") or DEFAULT_MASTER
    prepare_environment(master)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    if master.startswith("local"):
        # Metadata logs are small next to what Spark is sized for: few shuffle partitions, no UI.
        builder = builder.config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
    if quick_start:
        builder = builder.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
