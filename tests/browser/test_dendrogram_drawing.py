"""The dendrogram as Chromium draws it (issue 20, defect 3): every leaf name is inside the
chart, none cut on the left however wide its letters, and the distance axis reads what its
gridlines mark (0.25 and 0.75, not "0.2" and "0.8")."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage

from annotation.charts import Bar, bar_chart, heatmap
from annotation.opensort.dendrogram import MAX_LABEL_CHARS, dendrogram_svg

pytestmark = pytest.mark.browser


def _tree(n: int) -> np.ndarray:
    """An average-linkage tree of n cards at distances between 0 and 1."""
    points = np.random.default_rng(7).random((n, 2)) / 2
    return linkage(points, method="average")


def test_leaf_names_fit_and_the_axis_names_its_gridlines(browser):
    labels = [
        "W" * MAX_LABEL_CHARS,  # the widest capitals, at the longest name shown whole
        "M" * (MAX_LABEL_CHARS + 10),  # cut with an ellipsis, still whole on screen
        "conv-3#1",
        "ĀĒĪŌŪ wide and narrow iiii",
        "@@@@@@@@@@@@@@@@@@@@",
    ]
    svg = dendrogram_svg(_tree(len(labels)), labels)
    page = browser.new_page()
    page.set_content(f"<!doctype html><html><body style='margin:0'>{svg}</body></html>")
    leaves = page.evaluate(
        """() => [...document.querySelectorAll('svg text.leaf')].map(t => {
            const b = t.getBBox();
            return {x: b.x, right: b.x + b.width};
        })"""
    )
    view = page.evaluate("() => document.querySelector('svg').viewBox.baseVal.width")
    assert len(leaves) == len(labels)
    for leaf in leaves:
        assert leaf["x"] >= 0, leaves  # nothing cut on the left
        assert leaf["right"] <= view, leaves
    ticks = page.evaluate(
        """() => [...document.querySelectorAll('svg text.tick')].map(t => t.textContent)"""
    )
    assert ticks == ["0", "0.25", "0.5", "0.75", "1"]
    page.close()


def test_the_report_charts_keep_wide_labels_whole(browser):
    """The report's bar chart and heatmap reserve their label column the same way."""
    wide = ["W" * 30, "Must-Not Violation", "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM"]
    charts = [
        bar_chart([Bar(label, 0.5, 0.25, 0.75) for label in wide], title="kappa"),
        heatmap(wide, wide, [[1, 2, 3]] * 3, title="confusion"),
    ]
    page = browser.new_page()
    page.set_content(f"<!doctype html><html><body>{''.join(charts)}</body></html>")
    boxes = page.evaluate(
        """() => [...document.querySelectorAll('svg')].map(svg => ({
            width: svg.viewBox.baseVal.width,
            texts: [...svg.querySelectorAll('text[text-anchor="end"]')].map(t => {
                const b = t.getBBox();
                return {x: b.x, right: b.x + b.width};
            }),
        }))"""
    )
    for chart in boxes:
        assert chart["texts"], chart
        for box in chart["texts"]:
            assert box["x"] >= 0 and box["right"] <= chart["width"], chart
    page.close()
