"""Numbers with units in the published pages' prose come from a results table or are listed.

Outside the rendered results blocks and the code, every number followed by a unit on a
page of `readme_tables.PAGES` must appear in a rendered table of some page, or be listed
in `benchmarks/prose_numbers.py` with its source; a listed figure with a `value` must be
that value rounded as printed. That module says what its sources mean; the expressions
below say what a number with a unit is.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import cache
from typing import NamedTuple

import pytest

from benchmarks import readme_tables
from benchmarks.prose_numbers import DINING_SPEED, PROSE, Stated

NUMBER = r"\d[\d,]*(?:\.\d+)?"  # 7, 1,558, 0.37
JOIN = r"\s?(?:/|to|-|–)\s?"  # 14.1 to 21.1 s, 171/128/133x, 3,000-3,600 requests/s
SCALE = r"[kMB]"  # thousand, million, billion: 260 k, 1.8 M
SYMBOL = r"[%x×]"  # written against the number: 6%, 133x
WORD_UNITS = "|".join(
    [
        r"(?:[A-Za-z]+\s){0,2}[A-Za-z]*/s",  # 10,000/s, 55,897 env steps/s
        r"SPS",
        r"µs|ms|s|min|h|seconds?|minutes?|hours?|days?",
        r"bytes|[KMGT]i?B",
        r"tokens?",
    ]
)
FIGURE = re.compile(
    rf"""
    (?<![\w.,/-])                       # not the tail of a name, version or path
    (?P<numbers>{NUMBER}(?:{JOIN}{NUMBER})*)
    (?:[ -]?(?P<scale>{SCALE})(?!\w))?
    (?:(?P<symbol>{SYMBOL})|[ \n-]?(?P<unit>{WORD_UNITS}))?
    (?![\w/])
    """,
    re.X,
)
CANONICAL = {
    "×": "x",
    "second": "s",
    "seconds": "s",
    "minute": "min",
    "minutes": "min",
    "hour": "h",
    "hours": "h",
    "token": "tokens",
}
CODE = re.compile(r"^```.*?^```|^ {4}\S.*?$|`[^`\n]*`", re.S | re.M)  # fenced, indented, inline


class Figure(NamedTuple):
    key: str  # the number without thousands separators, its scale and unit: "260k", "20 s"
    number: str  # as printed: "1,558"
    line: int


def figures(text: str) -> list[Figure]:
    found = []
    for match in FIGURE.finditer(text):
        scale, symbol, unit = match["scale"] or "", match["symbol"], match["unit"]
        if not (scale or symbol or unit):
            continue
        suffix = CANONICAL.get(symbol, symbol) if symbol else ""
        if unit:
            unit = " ".join(unit.split())
            suffix = " " + CANONICAL.get(unit, unit)
        line = text.count("\n", 0, match.start()) + 1
        for number in re.split(JOIN, match["numbers"]):
            found.append(Figure(number.replace(",", "") + scale + suffix, number, line))
    return found


def prose(text: str) -> str:
    """`text` with its results blocks and code blanked, line numbers kept."""
    for pattern in (readme_tables.BLOCK, CODE):
        text = pattern.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), text)
    return text


@cache
def table_figures() -> frozenset[str]:
    """Every figure printed in a rendered results table of any page."""
    return frozenset(
        figure.key
        for page in readme_tables.PAGES
        for block in readme_tables.BLOCK.finditer(page.read_text())
        for figure in figures(block["body"])
    )


def key(stated: Stated) -> str:
    (figure,) = figures(stated.text)
    return figure.key


def problems(name: str, text: str) -> list[str]:
    """What on page `name` is neither in a results table nor listed as often as printed."""
    listed: Counter[str] = Counter()
    for stated in PROSE.get(name, ()):
        listed[key(stated)] += stated.count
    found = figures(prose(text))
    printed = Counter(figure.key for figure in found)
    return [
        f"{name}:{figure.line}: {figure.key!r} is in no results table and not listed in "
        "benchmarks/prose_numbers.py"
        for figure in found
        if figure.key not in table_figures() and figure.key not in listed
    ] + [
        f"{name}: {figure!r} is listed {count} times in benchmarks/prose_numbers.py and "
        f"printed {printed[figure]} times"
        for figure, count in listed.items()
        if printed[figure] != count
    ]


def rounds_to(value: float, printed: str) -> bool:
    """Whether `value` rounds to `printed` at its precision (`260` to tens, `0.30` to
    hundredths)."""
    digits = printed.replace(",", "")
    if "." in digits:
        step = 10.0 ** -len(digits.split(".")[1])
    else:
        step = 10.0 ** (len(digits) - len(digits.rstrip("0"))) if digits.strip("0") else 1.0
    return abs(value - float(digits)) <= step / 2 * (1 + 1e-9)


def drift(stated: Stated) -> str | None:
    """Why a listed figure is not its source's value rounded as printed, if it is not."""
    assert stated.value is not None
    (figure,) = figures(stated.text)
    value = stated.value()
    if rounds_to(value, figure.number):
        return None
    return f"{stated.text}: {stated.source} gives {value:g}"


PAGE_NAMES = [str(page.relative_to(readme_tables.ROOT)) for page in readme_tables.PAGES]
CHECKED = [
    pytest.param(stated, id=f"{page}:{stated.text}")
    for page, listed in PROSE.items()
    for stated in listed
    if stated.value is not None
]


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_every_prose_figure_is_in_a_results_table_or_listed(name):
    assert problems(name, (readme_tables.ROOT / name).read_text()) == []


def test_the_list_names_published_pages_and_one_figure_per_entry():
    assert set(PROSE) <= set(PAGE_NAMES)
    for listed in PROSE.values():
        for stated in listed:
            assert len(figures(stated.text)) == 1, stated.text
            assert stated.source and stated.count >= 1, stated


@pytest.mark.parametrize("stated", CHECKED)
def test_a_listed_figure_is_its_source_rounded_as_printed(stated):
    assert drift(stated) is None


def test_an_unlisted_figure_and_a_drifted_one_are_caught():
    text = (readme_tables.ROOT / "README.md").read_text()
    planted = text + "\nIt trains at 4.2 k steps/s.\n"
    assert problems("README.md", planted) == [
        f"README.md:{text.count(chr(10)) + 2}: '4.2k steps/s' is in no results table and "
        "not listed in benchmarks/prose_numbers.py"
    ]
    # IPPO's training speed, printed in thousands ("518 k"), whatever its published value
    (listed,) = [
        s
        for s in PROSE["docs/benchmarks.md"]
        if s.source == f"{DINING_SPEED}: points.2.ippo_agent_steps_per_s" and s.text.endswith(" k")
    ]
    assert drift(listed) is None
    value = listed.value()  # in thousands
    assert drift(replace(listed, text=f"{value * 0.9:.0f} k")) is not None
    assert drift(replace(listed, text=f"{value:.1f} k")) is None
    assert drift(replace(listed, text=f"{value + 0.2:.1f} k")) is not None


def test_figures_reads_ranges_scales_and_units():
    text = "took 14.1 to 21.1 s (rounds 171/128/133x), 8.3 k / 8.4 k agent\nsteps/s, a 2x64 MLP"
    assert [figure.key for figure in figures(text)] == [
        "14.1 s",
        "21.1 s",
        "171x",
        "128x",
        "133x",
        "8.3k",
        "8.4k agent steps/s",
    ]
