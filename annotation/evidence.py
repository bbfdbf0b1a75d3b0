"""An evidence quote anchored to a span of a turn: the annotator selects text in a message of
the card (this turn or an earlier one of its conversation) and presses ' (the card's quote
key); the server finds the selection in the stored text (`locate`) and the card's form
carries the span (turn, part, part index, start, end) with the quote. On submit the server
checks the quote is exactly the stored text at that span (`check_span`), whatever the client
sent.

Offsets are [start, end) in Python characters (code points) of the stored text:
`Turn.user_text` for the part "user", `Turn.reply_text` for "reply", and for a reply part
(`thinking`, `tool_call`, `tool_result`, with `part_index` its position in Turn.reply_parts)
the text the card shows of it (annotation/episodes/parts.py, as an episode's quotes)."""

from __future__ import annotations

from dataclasses import dataclass

from .reply_parts import REPLY_PART_KINDS, kind_of, reply_part_text

PARTS = {
    "user": "user message",
    "reply": "reply",
    "thinking": "thinking",
    "tool_call": "tool call",
    "tool_result": "tool result",
}
# characters the page's Markdown rendering may drop or add around the text a reader selects:
# `locate` ignores them on both sides, and treats every run of white space as one space
MARKUP = frozenset("*_`#>~|")


class EvidenceError(ValueError):
    """A quote or span the server refuses; the message names the turn, part and span."""


@dataclass(frozen=True)
class EvidenceSpan:
    turn_id: int
    part: str
    start: int
    end: int
    part_index: int | None = None  # a reply part's position in Turn.reply_parts

    def fields(self) -> dict:
        """The Annotation fields that store the span."""
        return {
            "evidence_turn_id": self.turn_id,
            "evidence_part": self.part,
            "evidence_part_index": self.part_index,
            "evidence_start": self.start,
            "evidence_end": self.end,
        }


def part_text(turn, part: str, part_index: int | None = None) -> str:
    """The stored text of a part of `turn`; EvidenceError when a reply part's index is not
    a part of that kind."""
    if part == "user":
        return turn.user_text
    if part == "reply":
        return turn.reply_text
    parts = turn.reply_parts or []
    if part_index is None or not 0 <= part_index < len(parts) or kind_of(parts[part_index]) != part:
        raise EvidenceError(
            f"Evidence: turn {turn.index} has no {PARTS.get(part, part)} at part "
            f"{part_index}; select the text in an unfolded {PARTS.get(part, part)} again."
        )
    return reply_part_text(parts[part_index])


def where_of(turn, part: str, part_index: int | None = None) -> str:
    """The part in words: "turn 3's reply", "turn 3's tool result (part 2)"."""
    index = f" (part {part_index})" if part in REPLY_PART_KINDS else ""
    return f"turn {turn.index}'s {PARTS[part]}{index}"


def check_part(part: str, part_index) -> None:
    """A known part, with an index for a reply part and none for user or reply."""
    if part not in PARTS:
        raise EvidenceError(f"Evidence: unknown part {part!r} (choose {', '.join(PARTS)}).")
    if part in REPLY_PART_KINDS and part_index is None:
        raise EvidenceError(f"Evidence: a quote from a {PARTS[part]} needs its part index.")
    if part not in REPLY_PART_KINDS and part_index is not None:
        raise EvidenceError(f"Evidence: a quote from the {PARTS[part]} takes no part index.")


def check_quote(text: str, start: int, end: int, quote: str, where: str = "the text") -> str:
    """The quote must be text[start:end], a non-empty span inside the text; returns that
    stored text. Line ends are compared as one (a form posts a line end as CR LF)."""
    if not (0 <= start < end <= len(text)):
        raise EvidenceError(
            f"Evidence: characters {start}-{end} are not a span of {where} "
            f"({len(text)} characters)."
        )
    found = text[start:end]
    if _lines(found) != _lines(quote):
        shown = found if len(found) <= 60 else found[:57] + "..."
        raise EvidenceError(
            f"Evidence: the quote is not the text at characters {start}-{end} of {where} "
            f"(there: “{shown}”)."
        )
    return found


def _lines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def source_turn(card, turn_id: int):
    """The turn a quote may come from: the card itself or an earlier turn of its
    conversation; EvidenceError otherwise."""
    # type(card) is Turn: this module stays below models (models imports EvidenceSpan)
    turn = (
        type(card)
        .objects.filter(pk=turn_id, conversation_id=card.conversation_id, index__lte=card.index)
        .first()
    )
    if turn is None:
        raise EvidenceError(
            f"Evidence: turn id {turn_id} is not this card's turn or an earlier turn of "
            f"its conversation; quote from turns 1-{card.index} only."
        )
    return turn


def check_span(card, span: EvidenceSpan, quote: str) -> str:
    """The server's rule for a span posted with a quote (form, API): a turn of the card's
    conversation up to the card, a known part, and the quote at the span. Returns the quote
    as stored there (what the annotation keeps)."""
    check_part(span.part, span.part_index)
    turn = source_turn(card, span.turn_id)
    text = part_text(turn, span.part, span.part_index)
    return check_quote(
        text, span.start, span.end, quote, where_of(turn, span.part, span.part_index)
    )


def _normalised(text: str) -> tuple[str, list[int]]:
    """The text without MARKUP, white space runs as one space, with each character's
    position in `text`."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch in MARKUP:
            continue
        if ch.isspace():
            if chars and chars[-1] == " ":
                continue
            ch = " "
        chars.append(ch)
        where.append(i)
    return "".join(chars), where


def locate(text: str, selected: str, hint: int | None = None) -> tuple[int, int] | None:
    """[start, end) of the stored text a reader selected on the page (rendered Markdown: the
    selection may lack markup and differ in white space), or None when it is not there.
    Several matches: the one nearest `hint` (the selection's offset in the rendered text),
    else the first."""
    needle, _ = _normalised(selected)
    needle = needle.strip()
    if not needle:
        return None
    hay, where = _normalised(text)
    found: list[int] = []
    at = hay.find(needle)
    while at != -1:
        found.append(at)
        at = hay.find(needle, at + 1)
    if not found:
        return None
    best = min(found, key=lambda i: abs(i - hint)) if hint is not None else found[0]
    return where[best], where[best + len(needle) - 1] + 1


def from_selection(card, post) -> dict:
    """The evidence box's context for a selection posted by the card's quote key:
    `quote` (the selected text), `turn` (the message's turn id), `part`, `hint`. The span is
    found in the stored text; EvidenceError says why not."""
    quote = post.get("quote", "")
    part = post.get("part", "")
    try:
        turn_id = int(post.get("turn", ""))
        hint = int(post["hint"]) if post.get("hint") not in (None, "") else None
        index = post.get("part_index")
        part_index = int(index) if index not in (None, "") else None
    except ValueError:
        raise EvidenceError("Evidence: select text inside a message, then press '.") from None
    if part not in PARTS:
        raise EvidenceError(
            "Evidence: select text in a user message, a reply, or an unfolded tool call, "
            "tool result or thinking (not a heading or the labels), then press '."
        )
    check_part(part, part_index)
    turn = source_turn(card, turn_id)
    text = part_text(turn, part, part_index)
    where = where_of(turn, part, part_index)
    found = locate(text, quote, hint)
    if found is None:
        shown = quote.strip() if len(quote.strip()) <= 60 else quote.strip()[:57] + "..."
        raise EvidenceError(
            f"Evidence: “{shown}” is not in the stored text of {where}; select text within "
            "one message or one part."
        )
    start, end = found
    return {
        "span": EvidenceSpan(turn.pk, part, start, end, part_index),
        "span_turn": turn,
        "quote": text[start:end],
    }


def shown(annotation) -> dict:
    """The evidence box's context for a stored annotation (or None)."""
    if annotation is None or annotation.evidence_turn_id is None:
        return {"evidence_text": annotation.evidence if annotation else ""}
    return {
        "span": annotation.span,
        "span_turn": annotation.evidence_turn,
        "quote": annotation.evidence,
    }


def from_form(card, form) -> dict:
    """The evidence box's context for a labels form sent back refused: its span if it holds,
    else its text and why the span was refused."""
    data = form.data
    text = data.get("evidence", "")
    names = ("evidence_turn", "evidence_part", "evidence_start", "evidence_end")
    if not any(data.get(n) for n in names):
        return {"evidence_text": text}
    try:
        turn_id, start, end = (
            int(data.get(n, "")) for n in ("evidence_turn", "evidence_start", "evidence_end")
        )
        index = data.get("evidence_part_index")
        part_index = int(index) if index not in (None, "") else None
        span = EvidenceSpan(turn_id, data.get("evidence_part", ""), start, end, part_index)
        quote = check_span(card, span, text)
    except (ValueError, EvidenceError) as e:
        reason = str(e) if isinstance(e, EvidenceError) else "Evidence: the span is not numbers."
        return {"evidence_text": text, "evidence_error": reason}
    return {"span": span, "span_turn": source_turn(card, span.turn_id), "quote": quote}


def span_at_index(card, given: dict, quote: str) -> tuple[EvidenceSpan, str]:
    """A span as the API gives it ({turn: 1-based index, part, start, end}), checked like the
    form's: (the span, the quote as stored there)."""
    turn_id = (
        type(card)
        .objects.filter(conversation_id=card.conversation_id, index=given["turn"])
        .values_list("pk", flat=True)
        .first()
    )
    if turn_id is None or given["turn"] > card.index:
        raise EvidenceError(
            f"Evidence: turn {given['turn']} is not this card's turn or an earlier turn of "
            f"its conversation; quote from turns 1-{card.index} only."
        )
    span = EvidenceSpan(
        turn_id, given["part"], given["start"], given["end"], given.get("part_index")
    )
    return span, check_span(card, span, quote)


def card_provider(card) -> dict:
    """The card page's provider (annotation/card): the evidence box, from the input sent
    back or from the user's own stored label."""
    if card.form is not None:
        return from_form(card.turn, card.form)
    return shown(card.mine)
