"""Answering pre_turn: layer searches, lexical and vector relevance, ranking, rerank, packing."""
