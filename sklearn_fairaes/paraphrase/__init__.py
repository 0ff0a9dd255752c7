"""paraphrase (being written)."""
