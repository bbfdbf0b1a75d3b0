"""The split check over entries (`--unit entries`, the default): the study's procedure.

An *entry* is what the splitting left of a conversation offered to the splitter: the parts
of a conversation it split, or the conversation itself when it was left whole. Offered:
named by a split job that has started (`Job.params["conversations"]`, annotation/views/split.py
`ask_llm`; a conversation the job skipped, one of one turn or whose answer failed, was left
whole all the same), carrying a split proposal (the model's, open or dismissed by the lead,
or the lead's), or split (by the model's proposal or by hand). A conversation nobody offered
to the splitter is no entry; neither is an original once split (its parts are). What
happened to an entry since (a sample or a filter setting it aside) does not take it out:
the check measures the splitting.

One card per drawn entry, on the `split-check-entries` preset (one pick-one axis, `entry`:
is the entry one self-contained topic? `correct`, or why not). The card shows the entry
beside its original with the entry's turns marked (`card_context`); an entry left whole is
the whole original, every turn marked.

The draw is reproducible across databases: the entries are put in a stable order (the
original's external id, source file and line, fingerprint, then the entry's first turn in
the original; database ids only break a tie left after those), `random.Random(seed)` picks
`n` of them, and the picked ones keep that order, the new study's card order."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q

from ...models import Conversation, Job, JobKind, JobStatus, SetAside, SplitProposal, Study, Turn
from ...splitcheck_codes import ENTRIES_PRESET, ENTRY_AXIS
from .common import Card, Size, check_slug, draw, new_study, size

PRESET = ENTRIES_PRESET
AXIS = ENTRY_AXIS
UNIT = "entry"  # the metadata's "unit"
EMPTY = "no conversation of it was offered to the splitter"
NOUN = "entries"


@dataclass(frozen=True)
class Entry:
    id: int
    external_id: str
    n_turns: int
    first_turn: int  # the original's turn index of the entry's turn 1
    part: int  # its place among the original's parts, 1-based; 0: the original left whole
    n_parts: int  # the original's parts (1 when left whole)
    original_id: int
    original_external_id: str
    original_n_turns: int
    # the original's stable identity, for the order: (source file, line, fingerprint)
    provenance: tuple[str, int, str]
    # the original's turns the splitting left out of every part (none for a whole entry)
    dropped: frozenset[int] = frozenset()

    @property
    def whole(self) -> bool:
        return self.part == 0

    @property
    def last_turn(self) -> int:
        """The original's index of the entry's last turn (dropped turns skipped)."""
        return _last_turn(self.first_turn, self.n_turns, self.dropped)

    def sort_key(self) -> tuple:
        return (
            self.original_external_id,
            *self.provenance,
            self.first_turn,
            self.original_id,
            self.id,
        )

    def as_metadata(self, source: Study) -> dict:
        return {
            "unit": UNIT,
            "study": source.slug,
            "entry_id": self.id,
            "entry_external_id": self.external_id,
            "entry_n_turns": self.n_turns,
            "whole": self.whole,
            "part": self.part,
            "n_parts": self.n_parts,
            "first_turn": self.first_turn,
            "last_turn": self.last_turn,
            "original_id": self.original_id,
            "original_external_id": self.original_external_id,
            "original_n_turns": self.original_n_turns,
        }


@dataclass
class Population:
    """The study's entries in the stable order, and what they are made of."""

    entries: list[Entry] = field(default_factory=list)
    n_split: int = 0  # originals split, whose parts are entries
    n_parts: int = 0
    n_whole: int = 0  # conversations offered and left whole

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def n_entries(self) -> int:
        """The entries, counted: the parts and those left whole (`population_counts` lists
        none of them)."""
        return self.n_parts + self.n_whole

    def said(self) -> str:
        return (
            f"the {self.n_parts:,} part{_s(self.n_parts)} of {self.n_split:,} split "
            f"conversation{_s(self.n_split)} and {self.n_whole:,} conversation{_s(self.n_whole)} "
            "left whole"
        )


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def offered_by_jobs(study: Study) -> set[int]:
    """The conversations the study's split jobs considered: named by a job that has started,
    or marked by the splitting job that read them (split_run.ask_all: every conversation of
    a study-wide run, which names none)."""
    considered = Conversation.objects.filter(study=study, split_considered_by__isnull=False)
    return set(considered.values_list("pk", flat=True)) | _named_by_jobs(study)


def population_counts(study: Study) -> Population:
    """What `population` counts (its split originals, their parts, those left whole), with
    no entry listed: counted by the database, from the parts and the proposals, where the
    population reads every conversation of the study (the split check's form and the
    methods text show these counts; issue 25). The conversations named by the split jobs
    are checked a chunk at a time."""
    parts = Conversation.objects.filter(
        study=study,
        split_from__set_aside=SetAside.SPLIT,
        split_from__split_from__isnull=True,  # of an original, as `population` reads them
        split_first_turn__isnull=False,
    )
    split = parts.aggregate(n_parts=Count("pk"), n_split=Count("split_from_id", distinct=True))
    # left whole: an original not split, offered (a proposal, or considered by a run)
    originals = Conversation.objects.filter(study=study, split_from__isnull=True).exclude(
        set_aside=SetAside.SPLIT
    )
    proposed = SplitProposal.objects.filter(conversation__study=study).values("conversation_id")
    considered = Conversation.objects.filter(study=study, split_considered_by__isnull=False)
    offered = set(
        originals.filter(
            pk__in=considered.values("pk").order_by().union(proposed.order_by())
        ).values_list("pk", flat=True)
    )
    named = sorted(_named_by_jobs(study) - offered)
    for start in range(0, len(named), NAMED_CHUNK):
        chunk = named[start : start + NAMED_CHUNK]
        offered.update(originals.filter(pk__in=chunk).values_list("pk", flat=True))
    return Population(n_split=split["n_split"], n_parts=split["n_parts"], n_whole=len(offered))


NAMED_CHUNK = 5000  # ids a query checks (SQLite takes up to 32,766 parameters)


def _named_by_jobs(study: Study) -> set[int]:
    """The conversations the study's started split jobs name in their parameters."""
    ids: set[int] = set()
    jobs = Job.objects.filter(study=study, kind=JobKind.SPLIT).exclude(status=JobStatus.QUEUED)
    for params in jobs.values_list("params", flat=True).iterator():
        named = params.get("conversations") if isinstance(params, dict) else None
        if isinstance(named, list):
            ids.update(pk for pk in named if isinstance(pk, int) and not isinstance(pk, bool))
    return ids


def population(study: Study) -> Population:
    """Every entry of the study (see the module's doc), in the stable order. Two queries."""
    rows = (
        Conversation.objects.filter(study=study)
        .filter(
            Q(split_from__isnull=True)
            | Q(split_from__set_aside=SetAside.SPLIT, split_first_turn__isnull=False)
        )
        .annotate(proposed=Exists(SplitProposal.objects.filter(conversation=OuterRef("pk"))))
        .values(
            "id",
            "external_id",
            "n_turns",
            "source_file",
            "source_line",
            "fingerprint",
            "set_aside",
            "split_from_id",
            "split_first_turn",
            "proposed",
        )
    )
    originals, parts = {}, {}
    for row in rows:
        if row["split_from_id"] is None:
            originals[row["id"]] = row
        else:
            parts.setdefault(row["split_from_id"], []).append(row)
    by_jobs = offered_by_jobs(study)
    drops: dict[int, set[int]] = {}
    for original_id, index in SplitProposal.objects.filter(
        conversation__study=study,
        kind=SplitProposal.Kind.DROP,
        status=SplitProposal.Status.APPLIED,
    ).values_list("conversation_id", "turn_index"):
        drops.setdefault(original_id, set()).add(index)
    found = Population()
    for pk, original in originals.items():
        provenance = (
            original["source_file"],
            original["source_line"] or 0,
            original["fingerprint"],
        )
        of_original = dict(
            original_id=pk,
            original_external_id=original["external_id"],
            original_n_turns=original["n_turns"],
            provenance=provenance,
        )
        if original["set_aside"] == SetAside.SPLIT:
            its_parts = sorted(parts.get(pk, []), key=lambda p: (p["split_first_turn"], p["id"]))
            if its_parts:
                found.n_split += 1
                found.n_parts += len(its_parts)
            found.entries += [
                Entry(p["id"], p["external_id"], p["n_turns"], p["split_first_turn"], k,
                      len(its_parts), **of_original, dropped=frozenset(drops.get(pk, ())))
                for k, p in enumerate(its_parts, 1)
            ]  # fmt: skip
        elif original["proposed"] or pk in by_jobs:
            found.n_whole += 1
            found.entries.append(
                Entry(pk, original["external_id"], original["n_turns"], 1, 0, 1, **of_original)
            )
    found.entries.sort(key=Entry.sort_key)
    return found


def open_proposals(study: Study) -> int:
    """Conversations left whole that still have open split proposals: the splitting is not
    finished (each counts as an entry left whole until the lead applies or dismisses)."""
    return (
        SplitProposal.objects.filter(
            conversation__study=study,
            conversation__split_from__isnull=True,
            status=SplitProposal.Status.OPEN,
        )
        .exclude(conversation__set_aside=SetAside.SPLIT)
        .values("conversation_id")
        .distinct()
        .count()
    )


def card_text(entry: Entry) -> str:
    """The card's own text (what My cards searches and an export with text carries)."""
    if entry.whole:
        where = f"It was left whole: all {entry.n_turns} turns."
    else:
        where = (
            f"Part {entry.part} of {entry.n_parts} of {entry.original_external_id}: turns "
            f"{entry.first_turn}-{entry.last_turn} of {entry.original_n_turns}."
        )
    return f"Is the entry {entry.external_id} one self-contained topic? {where}"


def create(
    source: Study,
    slug: str,
    *,
    n: int | None,
    seed: int,
    confidence: float | None = None,
    margin: float | None = None,
    name: str = "",
    created_by=None,
) -> Study:
    """A new study on the split-check-entries preset with one card per drawn entry of
    `source`; call inside a transaction (splitcheck.create_split_check)."""
    check_slug(slug)
    found = population(source)
    drawn = size(n, len(found), confidence, margin, noun=NOUN, empty=EMPTY)
    picked = draw(found.entries, drawn.n, seed, NOUN, EMPTY)
    cards = [Card(e.external_id, e.as_metadata(source), card_text(e)) for e in picked]
    return new_study(
        source, slug, preset=PRESET, name=name, methods=methods_text(source, drawn, found, seed),
        cards=cards, population=len(found), drawn=drawn, seed=seed, created_by=created_by,
    )  # fmt: skip


def methods_text(source: Study, drawn: Size, found: Population, seed: int) -> str:
    return (
        f"Split check of study {source.slug}: {drawn.n:,} of its {len(found):,} entries "
        f"({found.said()}), drawn with seed {seed}{drawn.said()}."
    )


# -- the card ---------------------------------------------------------------------------------


def _last_turn(first: int, n_turns: int, dropped: set[int]) -> int:
    """The original's index of a part's last turn: its n turns from `first`, dropped ones
    skipped."""
    k, seen = first - 1, 0
    while seen < n_turns:
        k += 1
        seen += k not in dropped
    return k


def card_context(check: dict) -> dict:
    """What the card shows of an entry (`check`, its metadata): {"split_check": {...}} with
    the original's turns, each knowing whether it is the entry's and which part it is in,
    the original's current parts, and the entry's own turns (none apart for an entry left
    whole: it is the original). Two queries. An entry or an original gone since (the split
    was undone) is named as missing rather than failing the card."""
    original_id, entry_id = check["original_id"], check["entry_id"]
    found = {
        c.pk: c
        for c in Conversation.objects.filter(study__slug=check["study"])
        .filter(Q(pk=original_id) | Q(split_from_id=original_id))
        .only("id", "external_id", "n_turns", "system_prompt", "set_aside", "split_first_turn")
    }
    original = found.get(original_id)
    parts = sorted(
        (c for pk, c in found.items() if pk != original_id),
        key=lambda c: (c.split_first_turn, c.pk),
    )
    dropped = set(
        SplitProposal.objects.filter(
            conversation_id=original_id,
            kind=SplitProposal.Kind.DROP,
            status=SplitProposal.Status.APPLIED,
        ).values_list("turn_index", flat=True)
    )  # turns the splitting left out of every part (splitting.original_turns)
    ranges = [
        {"index": k, "external_id": c.external_id, "first_turn": c.split_first_turn,
         "last_turn": _last_turn(c.split_first_turn, c.n_turns, dropped),
         "this": c.pk == entry_id}
        for k, c in enumerate(parts, 1)
    ]  # fmt: skip
    wanted = [original_id] if check["whole"] else [original_id, entry_id]
    turns: dict[int, list[Turn]] = {}
    for turn in Turn.objects.filter(conversation_id__in=wanted).order_by(
        "conversation_id", "index"
    ):
        turns.setdefault(turn.conversation_id, []).append(turn)
    first, this = check["first_turn"], next((r for r in ranges if r["this"]), None)
    last = this["last_turn"] if this else check["last_turn"]
    for turn in turns.get(original_id, []):
        kept = turn.index not in dropped
        turn.in_entry = kept and first <= turn.index <= last
        turn.part = next(
            (r for r in ranges if kept and r["first_turn"] <= turn.index <= r["last_turn"]),
            None,
        )
    entry = original if check["whole"] else found.get(entry_id)
    entry_turns = [] if check["whole"] else turns.get(entry_id, [])
    kept_indices = [k for k in range(first, last + 1) if k not in dropped]
    for turn, index in zip(entry_turns, kept_indices, strict=False):
        turn.original_index = index
    return {
        "split_check": {
            **check,
            "original": original,
            "original_turns": turns.get(original_id, []),
            "split_since": bool(
                check["whole"] and original and original.set_aside == SetAside.SPLIT
            ),
            "parts": ranges,
            "entry": entry,
            "entry_turns": entry_turns,
        }
    }
