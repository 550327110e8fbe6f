"""Retrieval evaluation: the harness that scores a searcher and its wire form."""
