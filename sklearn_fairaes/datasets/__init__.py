"""datasets (being written)."""
