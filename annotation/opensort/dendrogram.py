"""The dendrogram of the open sort's card clustering as SVG, drawn by our own small code
from scipy's coordinates (dendrogram(..., no_plot=True): icoord, dcoord, ivl), so no
matplotlib: readable without JavaScript, printable, scalable (a viewBox, width 100%). Every
text is escaped; the chart has role="img", an aria-label, a <title> and a <desc>."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.cluster.hierarchy import dendrogram

from ..charts import FONT, LINE, MUTED, esc, text_width

# the dendrogram draws at most this many leaves; a bigger tree is cut to its last merges
# (scipy's truncate_mode="lastp") and each leaf then stands for a cluster of cards
MAX_LEAVES = 300

ROW = 14  # px per leaf
PLOT_W = 360
MAX_LABEL_CHARS = 40


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _clip(text: str, n: int = MAX_LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def dendrogram_svg(
    z: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "Dendrogram of the cards",
    max_leaves: int = MAX_LEAVES,
    id_prefix: str = "dendrogram",
) -> str:
    """The tree of `z` (a linkage over len(labels) cards) drawn sideways: one row per leaf,
    its card's label on the left, merges to the right at their distance (0 to 1). More cards
    than `max_leaves`: the tree is cut to its last `max_leaves` merges and a leaf of several
    cards is labelled with how many (the description says so). Every text is escaped; the
    chart has role="img", an aria-label, a <title> and a <desc>; each leaf's full label and
    each merge's distance are in <title> tooltips."""
    n = len(labels)
    truncated = n > max_leaves
    kwargs = {"truncate_mode": "lastp", "p": max_leaves} if truncated else {}
    tree = dendrogram(z, no_plot=True, labels=list(labels), **kwargs)
    leaves = tree["ivl"]
    label_w = max((text_width(_clip(str(s))) for s in leaves), default=0) + 12
    top, bottom_axis = 8, 30
    height = top + ROW * len(leaves) + bottom_axis
    width = label_w + PLOT_W + 16
    x0 = label_w

    def x(d: float) -> float:
        return x0 + min(max(d, 0.0), 1.0) * PLOT_W

    def y(i: float) -> float:  # scipy puts leaf k at 5 + 10k
        return top + (i / 10.0) * ROW

    if truncated:
        desc = (
            f"{n} cards, more than the {max_leaves} the chart draws: it shows the last "
            f"{len(leaves)} merges, a leaf such as “(12)” standing for a cluster of 12 cards. "
            "The distance is 1 minus the share of experts who put two cards under the same type."
        )
    else:
        desc = (
            f"{n} cards clustered by average linkage; the distance is 1 minus the share of "
            "experts who put two cards under the same type. Cards joined near 0 were sorted "
            "together by nearly every expert who sorted both."
        )
    tid, did = f"{id_prefix}-title", f"{id_prefix}-desc"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_num(width)} {_num(height)}" '
        f'width="{_num(width)}" class="chart" role="img" aria-label="{esc(title)}" '
        f'aria-describedby="{esc(did)}" font-family="{esc(FONT)}" font-size="12">',
        f'<title id="{esc(tid)}">{esc(title)}</title>',
        f'<desc id="{esc(did)}">{esc(desc)}</desc>',
    ]
    axis_y = top + ROW * len(leaves) + 4
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(
            f'<line x1="{_num(x(t))}" y1="{_num(top)}" x2="{_num(x(t))}" y2="{_num(axis_y)}" '
            f'stroke="{LINE}"/>'
        )
        out.append(
            f'<text class="tick" x="{_num(x(t))}" y="{_num(axis_y + 12)}" '
            f'text-anchor="middle" fill="{MUTED}">{t:g}</text>'
        )
    out.append(
        f'<text x="{_num(x(0.5))}" y="{_num(axis_y + 25)}" text-anchor="middle" '
        f'fill="{MUTED}">distance (1 − share of experts)</text>'
    )
    for k, text in enumerate(leaves):
        shown = _clip(str(text))
        out.append(
            f'<text class="leaf" x="{_num(x0 - 6)}" y="{_num(y(5 + 10 * k) + 4)}" '
            f'text-anchor="end"><title>{esc(text)}</title>{esc(shown)}</text>'
        )
    for xs, ds in zip(tree["icoord"], tree["dcoord"], strict=True):
        points = " ".join(f"{_num(x(d))},{_num(y(i))}" for i, d in zip(xs, ds, strict=True))
        out.append(
            f'<polyline points="{points}" fill="none" stroke="#2f5bd3" stroke-width="1.5">'
            f"<title>merged at distance {ds[1]:.2f}</title></polyline>"
        )
    out.append("</svg>")
    return "\n".join(out)
