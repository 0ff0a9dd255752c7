"""report (being written)."""
