"""metrics (being written)."""
