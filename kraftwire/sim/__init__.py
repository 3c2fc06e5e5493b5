"""kraftwire.sim."""
