"""model_selection (being written)."""
