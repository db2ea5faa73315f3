"""Hugging Face Hub transport: publish a memory as a dataset repo, read one through a pinned cache."""
