"""kraftwire.net."""
