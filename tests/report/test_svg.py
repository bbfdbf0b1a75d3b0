"""The server-side charts: well-formed SVG with a viewBox, titles, escaped text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from annotation.charts import Bar, bar_chart, esc, heatmap

NS = "{http://www.w3.org/2000/svg}"


def _texts(root) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def test_it_draws_bars_with_whiskers_and_a_zero_line():
    s = bar_chart(
        [Bar("Must-Do Omission", 0.5, 0.2, 0.9), Bar("Negative", -0.25, -0.5, 0.0)],
        title="Per-type kappa",
    )
    root = ET.fromstring(s)
    assert root.get("viewBox").startswith("0 0 ")
    assert root.find(f"{NS}title").text == "Per-type kappa"
    assert len(root.findall(f".//{NS}rect")) == 2
    assert len(root.findall(f".//{NS}path")) == 2  # one whisker per bar
    assert "0.500" in _texts(root) and "-0.250" in _texts(root)
    tips = [t.text for t in root.iter(f"{NS}title")]
    assert any("range 0.200 to 0.900" in t for t in tips)
    # the zero line is the solid one, and the bar of -0.25 ends there
    zero = [ln for ln in root.iter(f"{NS}line") if ln.get("stroke-dasharray") is None]
    assert len(zero) == 1
    neg = root.findall(f".//{NS}rect")[1]
    assert float(neg.get("x")) + float(neg.get("width")) == pytest.approx(float(zero[0].get("x1")))


def test_it_draws_a_dash_with_the_reason_for_an_undefined_bar():
    s = bar_chart([Bar("Code Rollback", None, note="undefined: nobody used it")], title="t")
    root = ET.fromstring(s)
    assert root.findall(f".//{NS}rect") == []
    assert "—" in _texts(root)
    assert any("undefined: nobody used it" in t.text for t in root.iter(f"{NS}title"))


def test_it_escapes_text():
    s = bar_chart([Bar('<script>"x" & y', 0.1)], title="a < b & c")
    root = ET.fromstring(s)  # would fail on a raw < or &
    assert "<script>" not in s
    assert root.find(f"{NS}title").text == "a < b & c"
    assert esc("\"'<>&") == "&quot;&#x27;&lt;&gt;&amp;"


def test_it_draws_a_heatmap_with_numbers_and_a_scale():
    s = heatmap(["a", "b"], ["x", "y", "z"], [[0, 2, 4], [1, 0, 3]], title="H", row_title="alice")
    root = ET.fromstring(s)
    cells = [r for r in root.iter(f"{NS}rect") if r.get("width") == "34"]
    assert len(cells) == 6
    fills = [c.get("fill") for c in cells]
    assert fills[0] == "rgb(255,255,255)"  # 0 is white
    assert fills[2] == "rgb(47,91,211)"  # the maximum is the full accent
    assert ["0", "2", "4", "1", "0", "3"] == [t for t in _texts(root) if t.isdigit()][:6]
    assert root.find(f".//{NS}linearGradient") is not None
    assert any("a × z: 4 count" == t.text for t in root.iter(f"{NS}title"))


def test_it_refuses_a_matrix_of_the_wrong_shape():
    with pytest.raises(ValueError, match="not 2 x 2"):
        heatmap(["a", "b"], ["x", "y"], [[1, 2]], title="H")
