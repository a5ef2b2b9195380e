"""Untrusted model text made safe to show to another agent.

A message travels from one agent's reply into its neighbours' next user turn. It is
capped in length, stripped of control and format characters (no fake line breaks,
no terminal escapes, no invisible bidi overrides), and its angle brackets are
replaced by look-alike guillemets so it cannot forge an `<action>` tag or close the
block it is quoted in. Messages only ever enter user turns, never a system prompt.
"""

from __future__ import annotations

import re
import unicodedata

SCRATCHPAD_CHARS = 1000

_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_BRACKETS = str.maketrans({"<": "‹", ">": "›"})
_SPACES = re.compile(r"\s+")


def strip_control(text: str) -> str:
    """Drop control, format, surrogate and unassigned characters; whitespace becomes a space."""
    return "".join(
        " " if character.isspace() else character
        for character in text
        if character.isspace() or unicodedata.category(character) not in _DROPPED_CATEGORIES
    )


def sanitize_message(text: str, max_chars: int) -> str:
    """One line of at most `max_chars` characters, with no control characters or tags."""
    text = strip_control(text).translate(_BRACKETS)
    return _SPACES.sub(" ", text).strip()[:max_chars].rstrip()
