"""Colours axe cannot judge on the pages the browser tests render: text in a state the test
data does not show (a decided proposal's muted reason on its tinted row, a flag, the
consensus's "no smell"), the border of a text box, and the numbers on the report's
heatmaps, shaded by value. Text needs 4.5:1 (WCAG 1.4.3 AA), a box's border 3:1 (1.4.11)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotation import charts as svg
from annotation.charts import contrast

CSS = Path(__file__).resolve().parents[2] / "static" / "css" / "cardsort.css"

# (text colour, background) as cardsort.css and its templates combine them
TEXT_ON = [
    ("--fg", "--bg"),
    ("--fg", "--on"),  # the ticked type, a message
    ("--muted", "--card"),
    ("--muted", "--bg"),
    ("--muted", "--on"),  # a decided proposal's reason (.proposals-mine li.decided)
    ("--muted", "#f2f4f7"),  # a muted word in a code block
    ("--accent", "--card"),  # links, secondary buttons
    ("--accent", "--bg"),
    ("--accent", "--on"),  # a link in a message box
    ("#fff", "--accent"),  # buttons
    ("--warn", "#fef0c7"),  # .flag, the report's stale note
    ("--warn", "--card"),
    ("--err", "--card"),
    ("--err", "#fee4e2"),  # an error message
    ("--ok", "--card"),
    ("--ok", "#ecfdf3"),  # "no smell"
    ("--ok", "--on"),  # a sent proposal's confirmation on a ticked row
]


def palette() -> dict[str, str]:
    root = re.search(r":root\s*{([^}]*)}", CSS.read_text())[1]
    return dict(re.findall(r"(--[\w-]+)\s*:\s*(#[0-9a-fA-F]{3,6})", root))


def colour(name: str, colours: dict[str, str]) -> str:
    return colours[name] if name.startswith("--") else name


@pytest.mark.parametrize(("text", "background"), TEXT_ON)
def test_text_colours_meet_aa_contrast(text, background):
    colours = palette()
    ratio = contrast(colour(text, colours), colour(background, colours))
    assert ratio >= 4.5, f"{text} on {background}: {ratio:.2f}:1, needs 4.5:1"


def test_a_text_box_border_stands_out_from_the_page():
    rule = re.search(r"input, select, textarea\s*{([^}]*)}", CSS.read_text())[1]
    border = re.search(r"border:\s*1px solid (#[0-9a-fA-F]{3,6})", rule)
    assert border, f"the text boxes' border is not a colour of its own: {rule}"
    for background in ("#ffffff", palette()["--bg"]):
        assert contrast(border[1], background) >= 3, (border[1], background)


def test_every_number_on_a_heatmap_meets_aa_contrast():
    values = list(range(101))  # every shade from white (0) to the accent (100)
    drawn = svg.heatmap(["row"], [f"c{v}" for v in values], [values], title="shades")
    cells = re.findall(
        r'<rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"[^>]*/><text [^>]*fill="([^"]+)"', drawn
    )
    assert len(cells) == len(values)
    for r, g, b, ink in cells:
        shade = f"#{int(r):02x}{int(g):02x}{int(b):02x}"
        assert contrast(ink, shade) >= 4.5, f"{ink} on {shade}: {contrast(ink, shade):.2f}:1"
