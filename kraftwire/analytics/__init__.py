"""kraftwire.analytics."""
