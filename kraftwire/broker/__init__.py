"""kraftwire.broker."""
