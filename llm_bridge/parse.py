"""Model reply -> (action, message, scratchpad), never raising.

The reply format is an optional `<think>...</think>`, then `<action>NAME</action>`,
an optional `<message>...</message>` and an optional `<scratchpad>...</scratchpad>`.
Actions are found by four rules, in order:

1. `tag`:   the last `<action>...</action>` whose content names an action;
2. `line`:  the last `ACTION: NAME` line;
3. `name`:  the last action name, spelled exactly as the environment does, anywhere;
4. `fuzzy`: the action name closest to a word, or two or three consecutive words, of
   the reply (or to the tag content), if its difflib similarity reaches
   `fuzzy_threshold`.

Rules 1, 2 and 4 read names case-insensitively, with spaces or hyphens standing for
underscores ("grab left"); an action number also works in 1 and 2. Thoughts, messages
and scratchpad notes are never searched for the action. Anything else becomes the
no-op and counts as a parse failure. A constrained reply (the bare action name, or
`{"action": NAME}` from a JSON schema) is read by rule 3.

`split_reasoning` separates a reasoning model's thoughts from its answer before parsing:
`<think>...</think>` blocks, one left open when the token budget cut the reply off, and
the thoughts before a lone `</think>` (templates that open the block in the prompt).
"""

from __future__ import annotations

import difflib
import itertools
import re
from dataclasses import dataclass

from llm_bridge.sanitize import SCRATCHPAD_CHARS, sanitize_message

PARSE_METHODS = ("tag", "line", "name", "fuzzy", "failed")
DEFAULT_FUZZY_THRESHOLD = 0.8

_ACTION_TAG = re.compile(r"<action>(.*?)</action>", re.I | re.S)
_ACTION_LINE = re.compile(r"^[\s*#>-]*action\s*[:=]\s*(.+?)\s*$", re.I | re.M)
_THINK_BLOCK = re.compile(r"<think>.*?(</think>|$)", re.I | re.S)
_THOUGHT = re.compile(r"<think>(.*?)(?:</think>|$)", re.I | re.S)
_OPEN, _CLOSE = re.compile(r"<think>", re.I), re.compile(r"</think>", re.I)
_STRAY_TAG = re.compile(r"</?think>", re.I)
# Text the action search ignores: thoughts, and the free text of messages and notes.
_NOT_AN_ANSWER = re.compile(r"<(think|message|scratchpad)>.*?(</\1>|$)", re.I | re.S)
_MESSAGE_TAG = re.compile(r"<message>(.*?)(?:</message>|$)", re.I | re.S)
_SCRATCHPAD_TAG = re.compile(r"<scratchpad>(.*?)(?:</scratchpad>|$)", re.I | re.S)
# Words may hold digits, so that "give to 2" reaches GIVE_TO_2 and not GIVE_TO_1.
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,40}")
_DECORATION = re.compile(r"<[^>]*>|[*`'\"\[\]().,;!]")


@dataclass(frozen=True)
class ParsedReply:
    action: int
    method: str  # one of PARSE_METHODS
    message: str = ""
    scratchpad: str = ""

    @property
    def parsed(self) -> bool:
        return self.method != "failed"


def _canonical(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", text.strip()).upper()


class ActionParser:
    """Parses replies for one action vocabulary; build once, call per reply."""

    def __init__(
        self,
        action_names: tuple[str, ...],
        noop_action: int = 0,
        message_chars: int = 200,
        fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
    ):
        self.action_names = tuple(name.upper() for name in action_names)
        self.noop_action = noop_action
        self.message_chars = message_chars
        self.fuzzy_threshold = fuzzy_threshold
        self._ids = {name: index for index, name in enumerate(self.action_names)}
        # Exactly as the environment spells them; longest first, so PLACE_TABLE beats PLACE.
        spelled = sorted(action_names, key=len, reverse=True)
        alternatives = "|".join(re.escape(name) for name in spelled)
        self._name_anywhere = re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![A-Za-z0-9_])")

    def _exact(self, text: str) -> int | None:
        canonical = _canonical(text)
        if canonical in self._ids:
            return self._ids[canonical]
        if canonical.isdigit() and int(canonical) < len(self.action_names):
            return int(canonical)
        return None

    def _fuzzy(self, candidates: list[str]) -> int | None:
        # Highest similarity wins; on a tie the longer match ("place table" is PLACE_TABLE).
        best_key, best_action = (0.0, 0), None
        for candidate in candidates:
            canonical = _canonical(candidate)
            for name, index in self._ids.items():
                matcher = difflib.SequenceMatcher(None, canonical, name)
                # Cheap upper bounds first: most pairs cannot reach the threshold or the best.
                floor = max(best_key[0], self.fuzzy_threshold)
                if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
                    continue
                key = (matcher.ratio(), len(name))
                if key > best_key:
                    best_key, best_action = key, index
        return best_action if best_key[0] >= self.fuzzy_threshold else None

    def parse_action(self, reply: str) -> tuple[int, str]:
        visible = _NOT_AN_ANSWER.sub(" ", reply)
        tags = _ACTION_TAG.findall(visible)
        for content in reversed(tags):
            if (action := self._exact(content)) is not None:
                return action, "tag"
        for content in reversed(_ACTION_LINE.findall(visible)):
            if (action := self._exact(_DECORATION.sub(" ", content))) is not None:
                return action, "line"
        names = self._name_anywhere.findall(visible)
        if names:
            return self._ids[names[-1].upper()], "name"
        words = _WORD.findall(visible[-2000:])
        candidates = [content for content in tags if len(content) <= 40]
        candidates += words + ["_".join(pair) for pair in itertools.pairwise(words)]
        candidates += ["_".join(words[i : i + 3]) for i in range(len(words) - 2)]
        if (action := self._fuzzy(candidates)) is not None:
            return action, "fuzzy"
        return self.noop_action, "failed"

    def __call__(self, reply: str | None) -> ParsedReply:
        reply = reply or ""
        action, method = self.parse_action(reply)
        return ParsedReply(
            action=action,
            method=method,
            message=_last_block(_MESSAGE_TAG, reply, self.message_chars),
            scratchpad=_last_block(_SCRATCHPAD_TAG, reply, SCRATCHPAD_CHARS),
        )


def _last_block(pattern: re.Pattern[str], reply: str, max_chars: int) -> str:
    blocks = pattern.findall(_THINK_BLOCK.sub(" ", reply))
    return sanitize_message(blocks[-1], max_chars) if blocks else ""


def split_reasoning(text: str) -> tuple[str | None, str]:
    """`(reasoning, answer)` of a reply: the thoughts (None if it has none), verbatim but
    for the tags and surrounding blank space, and the rest, which alone is parsed."""
    thoughts = []
    close, opened = _CLOSE.search(text), _OPEN.search(text)
    if close and (opened is None or close.start() < opened.start()):
        thoughts.append(text[: close.start()])
        text = text[close.end() :]
    thoughts += _THOUGHT.findall(text)
    # Stray tags go too, so that splitting an answer again finds nothing (a resumed run
    # reads the answer back from the transcript and splits it again).
    answer = _STRAY_TAG.sub(" ", _THOUGHT.sub(" ", text)).strip()
    reasoning = "\n".join(thought.strip() for thought in thoughts).strip()
    return (reasoning or None), answer
