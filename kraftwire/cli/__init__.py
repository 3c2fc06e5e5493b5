"""The ``kraftwire`` command line: one module per verb, each with ``register(subparsers)``."""
