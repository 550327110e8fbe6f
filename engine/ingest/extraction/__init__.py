"""Fact extraction: what a turn says about the user, as facts, entities and typed relations.

`types.py` holds the result types and the `Extractor` port; `rules.py` is the offline,
rule-based default; the OpenAI-compatible LLM adapter lives in
`engine.adapters.openai_extractor`.
"""
