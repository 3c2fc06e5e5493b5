"""kraftwire.analytics: metadata-log analytics and simulation sweeps on Spark (PySpark).

``rows`` (pure Python) turns log files into flat rows; ``source`` is the ``kraftwire`` Spark data
source; ``jobs`` are DataFrame transformations; ``report`` writes Parquet, PNG and summaries;
``scenario`` builds real metadata logs from a scripted controller; ``sweep`` runs simulator seeds
as Spark tasks. Only ``source``, ``jobs``, ``report``, ``session`` and ``sweep`` import PySpark.
"""

JOBS = ("membership", "fencing", "elections", "isr-churn", "topics")
