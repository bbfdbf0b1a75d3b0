"""The precision-recall chart (svg.pr_chart): one mark per point with its threshold in a
tooltip, the chosen threshold ringed, a type without a positive card drawn as no data, and
every text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from annotation.charts import pr_chart

NS = "{http://www.w3.org/2000/svg}"


def test_each_point_is_a_mark_and_the_chosen_one_is_ringed():
    points = [[0.9, 1.0, 0.25], [0.6, 0.75, 0.75], [0.2, 0.5, 1.0]]
    root = ET.fromstring(pr_chart(points, title="run <1>: x & y", chosen=0.6))
    assert root.find(f"{NS}title").text == "run <1>: x & y"
    marks = root.findall(f".//{NS}circle")
    assert len(marks) == 3
    tips = [g.find(f"{NS}title").text for g in root.iter(f"{NS}g")]
    assert "threshold 0.600: precision 0.750, recall 0.750 (the chosen threshold)" in tips
    assert [m.get("r") for m in marks] == ["2.5", "4", "2.5"]
    assert root.find(f".//{NS}polyline") is not None


def test_a_type_without_a_positive_card_draws_no_data():
    svg = pr_chart([[0.3, 0.0, None]], title="none")
    assert "no data" in svg and "<circle" not in svg
