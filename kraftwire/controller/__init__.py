"""kraftwire.controller."""
