"""Shared test helpers (importable as ``tests.support``; ``pythonpath = ["."]``)."""
