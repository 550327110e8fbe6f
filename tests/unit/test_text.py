"""Text helpers of the packer: sanitise, truncate, query terms, fingerprint (reference §6.2–6.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.retrieval.text import FEEDBACK_SENTENCE, fingerprint, query_terms, sanitize, truncate

# --- sanitize -----------------------------------------------------------------------------


def test_placeholder_markdown_link_becomes_its_label() -> None:
    text = "Open the [dashboard](https://your-deployment.example/app) to check."
    assert sanitize(text) == "Open the dashboard to check."


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:3000/x",
        "https://127.0.0.1/x",
        "http://0.0.0.0:8080",
        "https://example.com/docs",
        "https://api.your_host.io",
        "https://PLACEHOLDER.dev",
        "https://your-mcp.server/sse",
    ],
)
def test_every_placeholder_marker_is_recognised(url: str) -> None:
    assert sanitize(f"see [docs]({url}) now") == "see docs now"


def test_placeholder_link_with_feedback_label_becomes_the_sdk_sentence() -> None:
    text = "Send [Feedback here](http://localhost:8080/feedback) please"
    assert sanitize(text) == f"Send {FEEDBACK_SENTENCE} please"
    assert "sdk.feedback.*" in FEEDBACK_SENTENCE


def test_real_links_and_urls_are_kept() -> None:
    text = "Read [the guide](https://docs.python.org/3/) or https://pypi.org/project/x"
    assert sanitize(text) == text


def test_bare_placeholder_url_is_deleted_and_the_gap_collapsed() -> None:
    assert sanitize("Call http://localhost:3000/api/v1 for data") == "Call for data"


def test_whitespace_runs_collapse() -> None:
    text = "  a  b\t\tc \t d\n\n\n\ne\r\n\r\n\r\nf  "
    assert sanitize(text) == "a b c d\n\ne\n\nf"


def test_single_tab_and_double_newline_are_left_alone() -> None:
    assert sanitize("a\tb\n\nc") == "a\tb\n\nc"


def test_sanitize_of_only_placeholders_is_empty() -> None:
    assert sanitize("   http://localhost:1234   ") == ""


# --- truncate -----------------------------------------------------------------------------


def test_truncate_keeps_fitting_text() -> None:
    assert truncate("abcde", 5) == "abcde"


def test_truncate_cuts_to_max_minus_three_plus_ellipsis() -> None:
    assert truncate("abcdefghij", 8) == "abcde..."
    assert truncate("abcdefghij", 3) == "..."


@pytest.mark.parametrize(("max_chars", "expected"), [(2, "ab"), (1, "a"), (0, ""), (-5, "")])
def test_truncate_below_three_cuts_hard(max_chars: int, expected: str) -> None:
    assert truncate("abcdefghij", max_chars) == expected


@given(st.text(), st.integers(min_value=-10, max_value=200))
def test_truncate_never_exceeds_max(text: str, max_chars: int) -> None:
    out = truncate(text, max_chars)
    assert len(out) <= max(0, max_chars)
    if len(text) <= max_chars:
        assert out == text


# --- query_terms --------------------------------------------------------------------------


def test_query_terms_are_unique_lower_long_and_ordered() -> None:
    assert query_terms("What is my FAVOURITE tea? my favourite  TEA? is") == [
        "what",
        "favourite",
        "tea?",
    ]


def test_query_terms_of_short_words_is_empty() -> None:
    assert query_terms("a an of to") == []


# --- fingerprint --------------------------------------------------------------------------


def test_user_turn_fingerprint_ignores_case_punctuation_and_the_answer() -> None:
    a = "user: What is the capital city of France?\nassistant: Paris."
    b = "User: what is the capital city of france!!\nAssistant: It is Paris, of course."
    assert fingerprint(a) == fingerprint(b) == "user:what is the capital city of france"


def test_user_turn_is_found_after_other_lines_and_spans_lines() -> None:
    text = "system: be nice\n  USER: first line of the question\nsecond line\ntool: ran"
    assert fingerprint(text) == "user:first line of the question second line"


def test_user_turn_is_cut_at_360_characters() -> None:
    fp = fingerprint("user: " + "x" * 1000)
    assert fp == "user:" + "x" * 360


def test_short_user_turn_falls_back_to_text_fingerprint() -> None:
    text = "user: hi there\nassistant: hello"
    assert len("hi there") < 24
    assert fingerprint(text) == "text:user: hi there assistant: hello"


def test_text_fingerprint_drops_urls_and_symbols_and_is_cut_at_480() -> None:
    assert fingerprint("Likes GREEN tea!! see https://tea.org/x (café_au-lait: 1.5)") == (
        "text:likes green tea see café_au-lait: 1.5"
    )
    assert fingerprint("y" * 1000) == "text:" + "y" * 480


def test_user_word_inside_a_line_is_not_a_turn() -> None:
    text = "the user: said something long enough to count here"
    assert fingerprint(text).startswith("text:")
