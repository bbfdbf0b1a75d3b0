"""An episode's evidence quotes highlighted in place: each quote's span of its turn's stored
text (annotation/episodes/parts.py says which text) drawn as <mark> in the rendered message,
tool call, tool result or thinking, a reply part that holds a quote shown unfolded.

The text is rendered as everywhere else (annotation/rendering.py: Markdown or code,
sanitized); the span's ends go in as two private-use characters before rendering, and come
out of the sanitized HTML as <mark> around every piece of text between them, so a span may
cross emphasis, links, code tokens or lines and the HTML stays well formed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .. import rendering
from ..messages import shown_html
from .parts import kind_of, reply_part_text

OPEN, CLOSE = "\ue000", "\ue001"
# a tag, its quoted attribute values allowed to hold ">"
_TAG = re.compile(r"""(<(?:[^>"']|"[^"]*"|'[^']*')*>)""")


def with_ends(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with OPEN and CLOSE around each span (clipped to the text; overlapping spans
    merged); the text's own private-use ends replaced, so only ours count."""
    text = text.replace(OPEN, "\ufffd").replace(CLOSE, "\ufffd")
    merged: list[list[int]] = []
    for start, end in sorted((max(0, s), min(len(text), e)) for s, e in spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, at = [], 0
    for start, end in merged:
        out += [text[at:start], OPEN, text[start:end], CLOSE]
        at = end
    return "".join(out + [text[at:]])


def marked(html: str) -> SafeString:
    """Sanitized HTML holding OPEN/CLOSE as text: each piece of text between them wrapped in
    <mark>, the ends dropped (from tags' attributes too)."""
    depth, out = 0, []
    for chunk in _TAG.split(html):
        if chunk.startswith("<"):
            out.append(chunk.replace(OPEN, "").replace(CLOSE, ""))
            continue
        for piece in re.split(f"([{OPEN}{CLOSE}])", chunk):
            if piece == OPEN:
                depth += 1
            elif piece == CLOSE:
                depth = max(0, depth - 1)
            elif piece:
                out.append(f"<mark>{piece}</mark>" if depth else piece)
    return mark_safe("".join(out))


def _part_body(part, spans) -> SafeString:
    """A quoted reply part's body from the very text a quote's offsets count in: a thinking
    part as a message, a tool call's or result's as code (JSON where it is structured)."""
    text = reply_part_text(part)
    shown, was_cut = rendering.cut(with_ends(text, spans))
    if kind_of(part) == "thinking":
        html = rendering.message_html(shown)
    else:
        lang = "json" if text.lstrip()[:1] in ("{", "[") and _is_json(text) else ""
        html = rendering.code_html(shown, lang)
    body = marked(str(html))
    return mark_safe(body + rendering.notice(len(text))) if was_cut else body


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass
class Piece:
    """One piece of a turn's reply as the episode card shows it."""

    html: SafeString | None = None  # a stretch of the reply text
    offset: int = 0
    part: rendering.ReplyPart | None = None  # or a reply part, with its body
    quoted: bool = False  # a quote lies in it: shown unfolded


@dataclass
class TurnView:
    turn: object
    user_html: SafeString
    pieces: list[Piece] = field(default_factory=list)
    in_episode: bool = True
    quoted: bool = False


def turn_view(turn, quotes, in_episode: bool = True) -> TurnView:
    """What the episode card shows of `turn`: its user message and its reply in order, the
    spans of `quotes` (the episode's EvidenceQuote rows on this turn) marked."""
    spans: dict[tuple[str, int | None], list[tuple[int, int]]] = {}
    for q in quotes:
        spans.setdefault((q.part, q.part_index), []).append((q.start, q.end))
    user = spans.get(("user", None), [])
    user_html = marked(str(shown_html(with_ends(turn.user_text or "", user)))) if user else None
    view = TurnView(turn, user_html or shown_html(turn.user_text or ""), in_episode=in_episode)
    view.quoted = bool(quotes)
    reply = spans.get(("reply", None), [])
    parts = list(turn.reply_parts or [])
    for item in rendering.reply_sequence(turn):
        if item.part is None:
            end = item.offset + len(item.text)
            at = item.offset
            mine = [(s - at, e - at) for s, e in reply if s < end and e > at]
            html = (
                marked(str(shown_html(with_ends(item.text, mine))))
                if mine
                else shown_html(item.text)
            )
            view.pieces.append(Piece(html=html, offset=item.offset))
            continue
        index = next((i for i, p in enumerate(parts) if p is item.part), None)
        shown = rendering.reply_part(item.part)
        mine = [] if index is None else spans.get((kind_of(item.part), index), [])
        if mine:
            shown = rendering.ReplyPart(
                kind=shown.kind, label=shown.label, name=shown.name, summary=shown.summary,
                body=_part_body(item.part, mine),
            )  # fmt: skip
        view.pieces.append(Piece(part=shown, quoted=bool(mine)))
    return view


def quote_place(quote, turn_index: int) -> str:
    """Where a quote lies, in words: "turn 3, tool result"."""
    names = {"user": "user message", "reply": "reply", "thinking": "thinking",
             "tool_call": "tool call", "tool_result": "tool result"}  # fmt: skip
    return escape(f"turn {turn_index}, {names.get(quote.part, quote.part)}")
