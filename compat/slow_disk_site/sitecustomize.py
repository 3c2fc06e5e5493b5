"""Imported at start-up by a Python child whose PYTHONPATH starts here: installs compat.slow_disk."""

try:
    from compat.slow_disk import install_from_env
except ImportError:   # not a kraftwire checkout on the path: nothing to do
    pass
else:
    install_from_env()
