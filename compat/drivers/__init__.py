"""Client programs the matrix runs, one per client, each in its own process.

Every driver takes ``MODE --bootstrap HOST:PORT[,...] [--group G] [--count N]`` and prints JSON lines:
``{"offset": n, "value": "<hex>"}`` per record it consumed (``assign`` and ``group`` modes), or one
``{"describe": {...}}`` line (``describe`` mode), or ``{"version": "..."}`` (``version`` mode).
"""
