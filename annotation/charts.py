"""Charts as SVG strings, drawn on the server (the report page's bars and heatmaps, and the
drawing vocabulary the open sort's dendrogram shares: fonts, lines, escaping, text widths):
readable without JavaScript, printable, and scalable (a viewBox, width 100%). Pure functions
of their arguments; every text is escaped, every chart has a <title>/<desc> for screen readers and
every mark a <title> tooltip.

    bar_chart(bars, *, title, ...) -> str   horizontal bars with whiskers and a zero line
    heatmap(rows, cols, matrix, *, title, ...) -> str   counts with a colour scale
    pr_chart(points, *, title, ...) -> str   a precision-recall curve, a chosen threshold marked
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape as _escape

FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
ACCENT = (47, 91, 211)  # --accent of cardsort.css
MUTED = "#5b6477"  # --muted of cardsort.css
LINE = "#d9dde5"
# a label column wider than this is cut with an ellipsis (the full text stays in <title>)
MAX_LABEL_CHARS = 34

# Advance widths of the printable ASCII characters (space to "~") in thousandths of an em:
# Helvetica's published metrics, close to every sans-serif system-ui font. The layout reserves
# room for a label from them, with a margin (SAFETY), so a label of wide letters ("WWW") is
# never cut on the left as it was with one average width for every character.
_ASCII_WIDTHS = (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
)  # fmt: skip
SAFETY = 1.15


def _char_em(ch: str) -> float:
    code = ord(ch)
    if 32 <= code <= 126:
        return _ASCII_WIDTHS[code - 32] / 1000
    if unicodedata.combining(ch):
        return 0.0
    return 1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else 0.8


def text_width(text: str, size: float = 12) -> float:
    """A generous estimate of `text`'s drawn width in px at `size` px, for layout only."""
    return SAFETY * size * sum(_char_em(ch) for ch in text)


def esc(text: object) -> str:
    """Text or attribute value, escaped for XML (quotes included)."""
    return _escape(str(text), {'"': "&quot;", "'": "&#x27;"})


def _clip(text: str, n: int = MAX_LABEL_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _open(width: float, height: float, title: str, desc: str, id_prefix: str) -> list[str]:
    tid, did = f"{id_prefix}-title", f"{id_prefix}-desc"
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_num(width)} {_num(height)}" '
        f'width="{_num(width)}" class="chart" role="img" '
        f'aria-labelledby="{esc(tid)} {esc(did)}" font-family="{esc(FONT)}" font-size="12">',
        f'<title id="{esc(tid)}">{esc(title)}</title>',
        f'<desc id="{esc(did)}">{esc(desc)}</desc>',
    ]


@dataclass(frozen=True)
class Bar:
    """One bar: `value` None draws "—" with `note` (the reason) as its tooltip."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    note: str = ""


def _ticks(lo: float, hi: float) -> list[float]:
    step = 0.25 if hi - lo <= 2 else 0.5
    first = math.ceil(lo / step - 1e-9) * step
    out, t = [], first
    while t <= hi + 1e-9:
        out.append(round(t, 6))
        t += step
    return out


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    desc: str = "",
    id_prefix: str = "bars",
    domain: tuple[float, float] = (0.0, 1.0),
    value_label: str = "value",
    whisker_label: str = "range",
) -> str:
    """Horizontal bars from 0 to each value, whiskers from `low` to `high`, a zero line and
    tick marks. The axis spans `domain`, widened to hold every value and whisker."""
    seen = [v for b in bars for v in (b.value, b.low, b.high) if v is not None]
    lo = min([domain[0], *seen])
    hi = max([domain[1], *seen])
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    label_w = 16 + max([text_width("no data"), *(text_width(_clip(b.label)) for b in bars)])
    plot_w, value_w, row_h, top = 420.0, 64.0, 24.0, 8.0
    axis_h = 30.0
    width = label_w + plot_w + value_w
    height = top + row_h * max(len(bars), 1) + axis_h

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    out = _open(width, height, title, desc or title, id_prefix)
    bottom = top + row_h * max(len(bars), 1)
    for t in _ticks(lo, hi):
        xt = x(t)
        # the zero line is solid and darker: bars start there
        style = (
            'stroke="#98a2b3" stroke-width="1.5"'
            if t == 0
            else (f'stroke="{LINE}" stroke-dasharray="2 3"')
        )
        out.append(
            f'<line x1="{_num(xt)}" y1="{_num(top)}" x2="{_num(xt)}" y2="{_num(bottom)}" {style}/>'
        )
        out.append(
            f'<text x="{_num(xt)}" y="{_num(bottom + 16)}" text-anchor="middle" '
            f'fill="{MUTED}">{esc(f"{t:g}")}</text>'
        )
    if not bars:
        out.append(f'<text x="{_num(label_w)}" y="{_num(top + 16)}" fill="{MUTED}">no data</text>')
    rgb = "rgb({},{},{})".format(*ACCENT)
    for k, b in enumerate(bars):
        y = top + k * row_h
        mid = y + row_h / 2
        out.append("<g>")
        tip = [f"{b.label}: {value_label} " + ("—" if b.value is None else f"{b.value:.3f}")]
        if b.low is not None and b.high is not None:
            tip.append(f"{whisker_label} {b.low:.3f} to {b.high:.3f}")
        if b.note:
            tip.append(b.note)
        out.append(f"<title>{esc('; '.join(tip))}</title>")
        out.append(
            f'<text x="{_num(label_w - 8)}" y="{_num(mid + 4)}" text-anchor="end">'
            f"{esc(_clip(b.label))}</text>"
        )
        if b.value is None:
            out.append(f'<text x="{_num(x(0) + 4)}" y="{_num(mid + 4)}" fill="{MUTED}">—</text>')
        else:
            x0, x1 = sorted((x(0), x(b.value)))
            out.append(
                f'<rect x="{_num(x0)}" y="{_num(y + 5)}" width="{_num(max(x1 - x0, 1))}" '
                f'height="{_num(row_h - 10)}" fill="{rgb}" fill-opacity="0.75"/>'
            )
        if b.low is not None and b.high is not None:
            xl, xh = x(b.low), x(b.high)
            out.append(
                f'<path d="M{_num(xl)} {_num(mid)}H{_num(xh)}M{_num(xl)} {_num(mid - 5)}'
                f'V{_num(mid + 5)}M{_num(xh)} {_num(mid - 5)}V{_num(mid + 5)}" '
                f'stroke="#1d2330" stroke-width="1.5" fill="none"/>'
            )
        shown = "—" if b.value is None else f"{b.value:.3f}"
        out.append(
            f'<text x="{_num(label_w + plot_w + 8)}" y="{_num(mid + 4)}">{esc(shown)}</text>'
        )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _shade(t: float) -> str:
    """White (t = 0) to the accent colour (t = 1)."""
    r, g, b = (round(255 + (c - 255) * t) for c in ACCENT)
    return f"rgb({r},{g},{b})"


def luminance(colour: str | Sequence[float]) -> float:
    """WCAG's relative luminance of a colour: "#rgb", "#rrggbb" or (r, g, b) in 0-255."""
    if isinstance(colour, str):
        h = colour.lstrip("#")
        if len(h) == 3:
            h = "".join(c * 2 for c in h)
        colour = [int(h[i : i + 2], 16) for i in (0, 2, 4)]
    srgb = [c / 255 for c in colour]
    r, g, b = (v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in srgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str | Sequence[float], b: str | Sequence[float]) -> float:
    """WCAG's contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _ink(t: float) -> str:
    """White or black, whichever stands out more on the shade of `t`: 4.5:1 at least on any
    shade (WCAG AA for text; no grey would be on the mid shades)."""
    shade = [round(255 + (c - 255) * t) for c in ACCENT]
    return "#fff" if contrast(shade, "#fff") >= contrast(shade, "#000") else "#000"


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    matrix: Sequence[Sequence[float]],
    *,
    title: str,
    desc: str = "",
    id_prefix: str = "heat",
    row_title: str = "",
    col_title: str = "",
    cell_label: str = "count",
) -> str:
    """A grid of cells shaded by value (0 white, the maximum full accent) with the number in
    each cell, column labels rotated above the grid, and a colour scale below it."""
    n_rows, n_cols = len(rows), len(cols)
    if len(matrix) != n_rows or any(len(r) != n_cols for r in matrix):
        raise ValueError(f"heatmap {title!r}: matrix is not {n_rows} x {n_cols}")
    vmax = max([0, *(v for r in matrix for v in r)])
    cell = 34.0
    label_w = 14 + max([text_width("0000"), *(text_width(_clip(r)) for r in rows)])
    col_h = 14 + 0.72 * max([text_width("0000"), *(text_width(_clip(c)) for c in cols)])
    left = label_w + (18 if row_title else 0)
    top = col_h + (18 if col_title else 0)
    grid_w, grid_h = cell * n_cols, cell * n_rows
    # the rotated column labels lean right: leave room for the last one
    width = left + max(grid_w, 200) + col_h * 0.72 + 10
    height = top + grid_h + 56
    out = _open(width, height, title, desc or title, id_prefix)
    if col_title:
        out.append(
            f'<text x="{_num(left + grid_w / 2)}" y="13" text-anchor="middle" '
            f'font-weight="600">{esc(col_title)}</text>'
        )
    if row_title:
        cy = top + grid_h / 2
        out.append(
            f'<text x="13" y="{_num(cy)}" text-anchor="middle" font-weight="600" '
            f'transform="rotate(-90 13 {_num(cy)})">{esc(row_title)}</text>'
        )
    for j, c in enumerate(cols):
        cx = left + cell * j + cell / 2
        out.append(
            f'<text x="{_num(cx)}" y="{_num(top - 6)}" transform="rotate(-45 {_num(cx)} '
            f'{_num(top - 6)})"><title>{esc(c)}</title>{esc(_clip(c))}</text>'
        )
    for i, r in enumerate(rows):
        cy = top + cell * i + cell / 2
        out.append(
            f'<text x="{_num(left - 6)}" y="{_num(cy + 4)}" text-anchor="end">'
            f"<title>{esc(r)}</title>{esc(_clip(r))}</text>"
        )
        for j, c in enumerate(cols):
            v = matrix[i][j]
            t = v / vmax if vmax else 0.0
            x, y = left + cell * j, top + cell * i
            shown = f"{v:g}" if isinstance(v, float) else str(v)
            ink = _ink(t)
            out.append(
                f"<g><title>{esc(f'{r} × {c}: {shown} {cell_label}')}</title>"
                f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(cell)}" height="{_num(cell)}" '
                f'fill="{_shade(t)}" stroke="#fff"/>'
                f'<text x="{_num(x + cell / 2)}" y="{_num(y + cell / 2 + 4)}" '
                f'text-anchor="middle" fill="{ink}" '
                f'font-size="11">{esc(shown)}</text></g>'
            )
    # the colour scale: a gradient from 0 to the maximum
    gid = f"{id_prefix}-scale"
    sy = top + grid_h + 18
    sw = min(max(grid_w, 120), 240)
    out.append(
        f'<defs><linearGradient id="{esc(gid)}"><stop offset="0" stop-color="{_shade(0)}"/>'
        f'<stop offset="1" stop-color="{_shade(1)}"/></linearGradient></defs>'
    )
    out.append(
        f'<rect x="{_num(left)}" y="{_num(sy)}" width="{_num(sw)}" height="10" '
        f'fill="url(#{esc(gid)})" stroke="{LINE}"/>'
    )
    out.append(f'<text x="{_num(left)}" y="{_num(sy + 24)}" fill="{MUTED}">0</text>')
    out.append(
        f'<text x="{_num(left + sw)}" y="{_num(sy + 24)}" text-anchor="end" fill="{MUTED}">'
        f"{esc(f'{vmax:g}')} {esc(cell_label)}</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def pr_chart(
    points: Sequence[Sequence[float | None]],
    *,
    title: str,
    desc: str = "",
    id_prefix: str = "pr",
    chosen: float | None = None,
) -> str:
    """A precision-recall curve: `points` [threshold, precision, recall] from the highest
    threshold down (recall null: no card of the truth has the type, nothing drawn), joined
    in that order, each point a mark with its threshold in a tooltip; the point of the
    `chosen` threshold ringed. Both axes span 0 to 1."""
    size, left, top, bottom = 260.0, 44.0, 10.0, 40.0
    width, height = left + size + 20, top + size + bottom
    out = _open(width, height, title, desc or title, id_prefix)

    def x(recall: float) -> float:
        return left + recall * size

    def y(precision: float) -> float:
        return top + (1 - precision) * size

    for t in _ticks(0, 1):
        out.append(
            f'<line x1="{_num(x(t))}" y1="{_num(top)}" x2="{_num(x(t))}" y2="{_num(top + size)}" '
            f'stroke="{LINE}" stroke-dasharray="2 3"/>'
            f'<line x1="{_num(left)}" y1="{_num(y(t))}" x2="{_num(left + size)}" y2="{_num(y(t))}" '
            f'stroke="{LINE}" stroke-dasharray="2 3"/>'
            f'<text x="{_num(x(t))}" y="{_num(top + size + 16)}" text-anchor="middle" '
            f'fill="{MUTED}">{esc(f"{t:g}")}</text>'
            f'<text x="{_num(left - 6)}" y="{_num(y(t) + 4)}" text-anchor="end" '
            f'fill="{MUTED}">{esc(f"{t:g}")}</text>'
        )
    out.append(
        f'<text x="{_num(left + size / 2)}" y="{_num(top + size + 34)}" text-anchor="middle">'
        "recall</text>"
        f'<text x="12" y="{_num(top + size / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_num(top + size / 2)})">precision</text>'
    )
    drawn = [(t, p, r) for t, p, r in points if p is not None and r is not None]
    if not drawn:
        out.append(f'<text x="{_num(left + 8)}" y="{_num(top + 20)}" fill="{MUTED}">no data</text>')
    rgb = "rgb({},{},{})".format(*ACCENT)
    if len(drawn) > 1:
        path = " ".join(f"{_num(x(r))},{_num(y(p))}" for _, p, r in drawn)
        out.append(f'<polyline points="{path}" fill="none" stroke="{rgb}" stroke-width="2"/>')
    for t, p, r in drawn:
        ring = chosen is not None and t == chosen
        tip = f"threshold {t:.3f}: precision {p:.3f}, recall {r:.3f}"
        if ring:
            tip += " (the chosen threshold)"
        out.append(
            f"<g><title>{esc(tip)}</title>"
            f'<circle cx="{_num(x(r))}" cy="{_num(y(p))}" r="{4 if ring else 2.5}" '
            + ('fill="#fff" stroke="#1d2330" stroke-width="2"/>' if ring else f'fill="{rgb}"/>')
            + "</g>"
        )
    out.append("</svg>")
    return "\n".join(out)
