"""Profiles measured by `ironlaw probe` (being written)."""
