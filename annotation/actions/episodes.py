"""What an annotator does on a session of an episode group (issue 21 point 2): open an
extracted episode (recorded as seen), record an episode the extractor missed (a turn range,
the alignment goal, evidence quotes located in the stored text), and rate how much of the
session's misalignment the extracted episodes capture. The pages call these; the server
decides every check, whatever the client sent.

A quote is named by the turn's position (1-based), its part (user, reply, thinking,
tool_call, tool_result: annotation/episodes/parts.py) with a reply part's position among the
turn's reply parts, and a span [start, end) of that part's stored text. A selection on the
page is found in the stored text by annotation/evidence.locate (markup and white space as
the page renders them); a posted span is checked by annotation/evidence.check_quote."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from .. import evidence
from ..episodes.parts import PARTS, kind_of, reply_part_text
from ..limits import too_long
from ..models import (
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    EpisodeSeen,
    EvidenceQuote,
    Group,
    Source,
    Turn,
)

MAX_QUOTES = 50
PART_WORDS = {
    "user": "user message",
    "reply": "reply",
    "thinking": "thinking",
    "tool_call": "tool call",
    "tool_result": "tool result",
}
COVERAGE_WORDS = ((0, "none"), (1, "partly"), (2, "fully"))
COVERAGE_QUESTION = (
    "How much of this session's real misalignment do the extracted episodes capture?"
)


class EpisodeRefused(ValueError):
    """Input the server refuses: `errors` maps each field (first_turn, last_turn, goal,
    evidence[2], ...) to why, in the fields' order; nothing was written."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__(" ".join(f"{k}: {v}" for k, v in errors.items()))


class CoverageRefused(ValueError):
    """A coverage rating the server refuses (too early, or not 0, 1 or 2): the message says
    why; nothing was written."""


@dataclass(frozen=True)
class Quote:
    """An evidence quote as the page posts it and the server checks it."""

    turn: int  # the turn's position, 1-based
    part: str
    part_index: int | None
    start: int
    end: int
    text: str

    @property
    def where(self) -> str:
        word = PART_WORDS.get(self.part, self.part)
        if self.part_index is not None and self.part not in ("user", "reply"):
            word = f"{word} (part {self.part_index + 1})"
        return f"turn {self.turn}'s {word}"


# --- the stored text a quote lies in --------------------------------------------------------


def part_text(turn: Turn, part: str, part_index: int | None) -> str | None:
    """The stored text of one part of `turn` (None: the turn has no such part)."""
    if part == "user":
        return turn.user_text or ""
    if part == "reply":
        return turn.reply_text or ""
    parts = turn.reply_parts or []
    if part_index is None or not 0 <= part_index < len(parts):
        return None
    if kind_of(parts[part_index]) != part:
        return None
    return reply_part_text(parts[part_index])


def _turn_at(conversation: Conversation, index: int) -> Turn | None:
    return Turn.objects.filter(conversation=conversation, index=index).first()


def locate_selection(conversation: Conversation, post) -> Quote:
    """A selection posted by the session page (`quote`: the selected text, `turn`: the
    turn's position, `part`, `part_index` for a reply part, `hint`: the selection's offset in
    the rendered text) found in the stored text; EpisodeRefused ({"evidence": why}) when it
    is not there."""
    selected = post.get("quote", "")
    part = post.get("part", "")
    try:
        index = int(post.get("turn", ""))
        part_index = _optional_int(post.get("part_index"))
        hint = _optional_int(post.get("hint"))
    except ValueError:
        raise EpisodeRefused(
            {"evidence": "select text inside one message or tool part of a turn, then add it."}
        ) from None
    if part not in PARTS:
        raise EpisodeRefused(
            {"evidence": "select text inside one message or tool part of a turn (not a "
             "heading or the episode list), then add it."}
        )  # fmt: skip
    turn = _turn_at(conversation, index)
    if turn is None:
        raise EpisodeRefused({"evidence": f"turn {index} is not a turn of this session."})
    if part in ("user", "reply"):
        part_index = None
    text = part_text(turn, part, part_index)
    where = Quote(index, part, part_index, 0, 0, "").where
    if text is None:
        raise EpisodeRefused({"evidence": f"{where} is not a part of this session."})
    found = evidence.locate(text, selected, hint)
    if found is None:
        shown = selected.strip()
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise EpisodeRefused(
            {"evidence": f"“{shown}” is not in the stored text of {where}; select text "
             "within one message or tool part."}
        )  # fmt: skip
    start, end = found
    return Quote(index, part, part_index, start, end, text[start:end])


def _optional_int(value) -> int | None:
    if value in (None, ""):
        return None
    number = int(value)
    if number < 0:
        raise ValueError(value)
    return number


# --- creating an episode ----------------------------------------------------------------------


def posted_quotes(post) -> list[Quote]:
    """The quotes a form posts (parallel lists quote_turn, quote_part, quote_part_index,
    quote_start, quote_end, quote_text), unchecked; EpisodeRefused names a malformed one."""
    names = ("quote_turn", "quote_part", "quote_part_index", "quote_start", "quote_end")
    columns = [post.getlist(n) for n in names] + [post.getlist("quote_text")]
    n = len(columns[-1])
    if any(len(c) != n for c in columns):
        raise EpisodeRefused({"evidence": "the quotes came incomplete; add them again."})
    if n > MAX_QUOTES:
        raise EpisodeRefused({"evidence": f"at most {MAX_QUOTES} quotes, got {n}."})
    quotes = []
    for i, (turn, part, part_index, start, end, text) in enumerate(zip(*columns, strict=True)):
        try:
            quotes.append(
                Quote(int(turn), part, _optional_int(part_index), int(start), int(end), text)
            )
        except ValueError:
            raise EpisodeRefused(
                {f"evidence[{i + 1}]": "its turn and characters must be whole numbers."}
            ) from None
    return quotes


def check_quote(conversation: Conversation, quote: Quote, field: str) -> Quote:
    """The quote exactly at its span of the stored text (evidence.check_quote), in a turn
    of the conversation; the quote as stored. EpisodeRefused names `field`."""
    long = too_long("evidence", quote.text, field)
    if long:
        raise EpisodeRefused({field: long.split(": ", 1)[1]})
    if quote.part not in PARTS:
        raise EpisodeRefused({field: f"unknown part {quote.part!r} ({', '.join(PARTS)})."})
    turn = _turn_at(conversation, quote.turn)
    if turn is None:
        raise EpisodeRefused(
            {field: f"turn {quote.turn} is not a turn of this session (1-{conversation.n_turns})."}
        )
    part_index = None if quote.part in ("user", "reply") else quote.part_index
    text = part_text(turn, quote.part, part_index)
    if text is None:
        raise EpisodeRefused({field: f"{quote.where} is not a part of this session."})
    try:
        stored = evidence.check_quote(text, quote.start, quote.end, quote.text, quote.where)
    except evidence.EvidenceError as e:
        raise EpisodeRefused({field: str(e).removeprefix("Evidence: ")}) from None
    return Quote(quote.turn, quote.part, part_index, quote.start, quote.end, stored)


def _turn_number(value, name: str, n: int, errors: dict) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        errors[name] = f"choose a turn of this session (1-{n})."
        return None
    if not 1 <= number <= n:
        errors[name] = f"turn {number} is not a turn of this session (1-{n})."
        return None
    return number


def check_episode(conversation: Conversation, post) -> tuple[int, int, str, list[Quote]]:
    """The posted episode checked whole: (first turn, last turn, goal, quotes); every
    refusal at once in EpisodeRefused, by field."""
    n = conversation.n_turns
    errors: dict[str, str] = {}
    first = _turn_number(post.get("first_turn", ""), "first_turn", n, errors)
    last = _turn_number(post.get("last_turn", ""), "last_turn", n, errors)
    if first is not None and last is not None and last < first:
        errors["last_turn"] = f"turn {last} is before the first turn, {first}."
    goal = post.get("goal", "").strip()
    if not goal:
        errors["goal"] = "write what the developer wanted (the alignment goal)."
    elif too_long("note", goal, "goal"):
        errors["goal"] = too_long("note", goal, "goal").split(": ", 1)[1]
    quotes: list[Quote] = []
    try:
        for i, quote in enumerate(posted_quotes(post)):
            try:
                quotes.append(check_quote(conversation, quote, f"evidence[{i + 1}]"))
            except EpisodeRefused as e:
                errors.update(e.errors)
    except EpisodeRefused as e:
        errors.update(e.errors)
    if errors:
        raise EpisodeRefused(errors)
    return first, last, goal, quotes


def create_episode(user, group: Group, conversation: Conversation, post) -> Episode:
    """A person's episode (run None, created_by `user`) with its quotes, in one transaction;
    EpisodeRefused (nothing written) for bad input."""
    first, last, goal, quotes = check_episode(conversation, post)
    turns = dict(
        Turn.objects.filter(
            conversation=conversation, index__in={q.turn for q in quotes}
        ).values_list("index", "pk")
    )
    with transaction.atomic():
        episode = Episode.objects.create(
            conversation=conversation, created_by=user, first_turn=first, last_turn=last,
            goal=goal,
        )  # fmt: skip
        EvidenceQuote.objects.bulk_create(
            EvidenceQuote(
                episode=episode,
                turn_id=turns[q.turn],
                part=q.part,
                part_index=q.part_index,
                start=q.start,
                end=q.end,
                quote=q.text,
                order=order,
            )  # fmt: skip
            for order, q in enumerate(quotes)
        )
    return episode


# --- seen, judged, and the coverage rating ----------------------------------------------------


def mark_seen(user, group: Group, episode: Episode) -> None:
    """Record that `user` opened `episode` in `group` (the first opening is kept). The
    episode card calls this too."""
    try:
        with transaction.atomic():
            EpisodeSeen.objects.get_or_create(episode=episode, annotator=user, group=group)
    except IntegrityError:  # two tabs at once: the other one recorded it
        pass


def extracted(conversation: Conversation):
    """The session's extracted episodes (of every run), in the page's order."""
    return Episode.objects.filter(conversation=conversation, run__isnull=False)


def judged_ids(user, group: Group, conversation: Conversation) -> set[int]:
    """The episodes of the session `user` has judged in `group` (a current judgement)."""
    return set(
        EpisodeJudgement.objects.filter(
            annotator=user, group=group, is_current=True, episode__conversation=conversation
        ).values_list("episode_id", flat=True)
    )


def seen_ids(user, group: Group, conversation: Conversation) -> set[int]:
    return set(
        EpisodeSeen.objects.filter(
            annotator=user, group=group, episode__conversation=conversation
        ).values_list("episode_id", flat=True)
    )


def not_yet_seen(user, group: Group, conversation: Conversation) -> list[Episode]:
    """The session's extracted episodes `user` has neither opened nor judged in `group`."""
    done = judged_ids(user, group, conversation) | seen_ids(user, group, conversation)
    return [
        e for e in extracted(conversation).only("pk", "first_turn", "last_turn") if e.pk not in done
    ]


def current_rating(user, group: Group, conversation: Conversation) -> CoverageRating | None:
    return CoverageRating.objects.filter(
        conversation=conversation, annotator=user, group=group, is_current=True
    ).first()


def coverage_closed_reason(user, group: Group, conversation: Conversation) -> str:
    """Why `user` may not rate the session's coverage yet ("" when they may)."""
    left = not_yet_seen(user, group, conversation)
    if not left:
        return ""
    ranges = ", ".join(
        f"turns {e.first_turn}-{e.last_turn}" if e.first_turn != e.last_turn
        else f"turn {e.first_turn}"
        for e in left[:5]
    ) + (", ..." if len(left) > 5 else "")  # fmt: skip
    n = len(left)
    return (
        f"Open or judge every extracted episode of this session first: {n} not yet seen ({ranges})."
    )


def rate_coverage(user, group: Group, conversation: Conversation, value) -> CoverageRating:
    """`user`'s rating of the session's coverage in `group` (0 none, 1 partly, 2 fully),
    once every extracted episode of the session is seen or judged; a new rating keeps the
    old row (is_current False). CoverageRefused says why not (nothing written)."""
    try:
        rating = int(str(value).strip())
    except ValueError:
        rating = -1
    if rating not in CoverageRating.Rating.values:
        raise CoverageRefused(
            f"coverage: choose 0 (none), 1 (partly) or 2 (fully), got “{str(value)[:20]}”."
        )
    reason = coverage_closed_reason(user, group, conversation)
    if reason:
        raise CoverageRefused(f"coverage: not saved. {reason}")
    try:
        with transaction.atomic():
            current = CoverageRating.objects.select_for_update().filter(
                conversation=conversation, annotator=user, group=group, is_current=True
            )
            old = current.first()
            if old is not None and old.rating == rating:
                return old
            current.update(is_current=False)
            return CoverageRating.objects.create(
                conversation=conversation, annotator=user, group=group, rating=rating,
                source=Source.BROWSER, created_at=timezone.now(),
            )  # fmt: skip
    except IntegrityError:  # a first rating sent twice at once (two tabs): one is kept
        raise CoverageRefused(
            "coverage: not saved: another rating of yours for this session was saved at the "
            "same moment; the page shows it."
        ) from None
