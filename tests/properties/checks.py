"""The invariants the state machine checks after every step, on the rows themselves. Each
takes what the machine remembers (its model) and the database, and fails naming the card,
the annotator and the round."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations

from annotation.agreement.data import load_records
from annotation.models import (
    Annotation,
    CardState,
    CardStatus,
    Comment,
    Consensus,
    Method,
    Proposal,
)

from .world import World

Key = tuple[int, int]  # (turn id, annotator id)
Labels = tuple[frozenset[str], str]  # (type codes, note)


@dataclass(frozen=True)
class Row:
    """One annotation row as the checks compare it."""

    pk: int
    turn_id: int
    annotator_id: int
    round: int
    is_current: bool
    codes: frozenset[str]
    note: str


def label_rows(world: World) -> list[Row]:
    rows = Annotation.objects.filter(turn__conversation__study_id=world.study_id)
    return [
        Row(a.pk, a.turn_id, a.annotator_id, a.round, a.is_current, a.codes, a.note)
        for a in rows.prefetch_related("types").order_by("pk")
    ]


def rows_by_annotator(rows: list[Row]) -> dict[int, tuple[Row, ...]]:
    """Everyone's rows, to tell whose changed in a step."""
    out: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        out[row.annotator_id].append(row)
    return {who: tuple(mine) for who, mine in out.items()}


def check_only_changed(before: list[Row], after: list[Row], allowed: int | None, step: str):
    """Nobody's rows changed in `step` but `allowed`'s (None: nobody's)."""
    b, a = rows_by_annotator(before), rows_by_annotator(after)
    changed = sorted(who for who in set(a) | set(b) if a.get(who) != b.get(who) and who != allowed)
    assert not changed, (
        f"{step} changed the annotation rows of user id(s) {changed}: "
        f"before {[b.get(w) for w in changed]}, after {[a.get(w) for w in changed]}"
    )


def current_labels(rows: list[Row]) -> dict[tuple[int, int, int], Labels]:
    """{(turn, annotator, round): (codes, note)} of the current rows."""
    out = {}
    for row in rows:
        if row.is_current:
            key = (row.turn_id, row.annotator_id, row.round)
            assert key not in out, f"two current rows for turn/annotator/round {key}"
            out[key] = (row.codes, row.note)
    return out


def check_labels_as_submitted(rows: list[Row], model: dict[tuple[int, int, int], Labels]):
    """Every current label, in every round, is what its annotator last submitted there
    successfully; a refused submit changed nothing."""
    stored = current_labels(rows)
    wrong = {
        key: (stored.get(key), model.get(key))
        for key in set(stored) | set(model)
        if stored.get(key) != model.get(key)
    }
    assert not wrong, (
        "current labels differ from the last successful submits, as "
        "{(turn, annotator, round): (stored, submitted)}: " + repr(wrong)
    )


def round1_snapshot(rows: list[Row], turn_id: int) -> tuple:
    return tuple(
        (r.pk, r.annotator_id, r.is_current, r.codes, r.note)
        for r in rows
        if r.turn_id == turn_id and r.round == 1
    )


def states_of(world: World) -> dict[int, CardState]:
    """The cards' states in group A, the only group their conversations are assigned to: a
    state in any other group is a card moved by someone who does not label it there."""
    states = list(CardState.objects.filter(turn__in=[t.pk for t in world.turns]))
    strays = [s for s in states if s.group_id != world.group.pk]
    assert not strays, f"card states in a group the cards are not assigned to: {strays}"
    return {s.turn_id: s for s in states}


def check_round1_frozen(world: World, rows: list[Row], frozen: dict[int, tuple]) -> None:
    """Once a card leaves round 1 its round-1 rows never change: snapshot them the first
    time the card is seen out of "open", compare ever after."""
    for turn_id, state in states_of(world).items():
        if state.status == CardStatus.OPEN:
            assert turn_id not in frozen, f"card {turn_id} went back to round 1 (open)"
            continue
        now = round1_snapshot(rows, turn_id)
        if turn_id not in frozen:
            frozen[turn_id] = now
        assert now == frozen[turn_id], (
            f"card {turn_id} left round 1, yet its round-1 rows changed: {frozen[turn_id]} -> {now}"
        )


def check_states_and_consensus(world: World, rows: list[Row]) -> None:
    """Each card's state agrees with its labels, and its consensus (one current at most)
    says how it arose."""
    study = world.study()
    states = states_of(world)
    n = len(world.annotators)
    current = current_labels(rows)
    # one current consensus per card and group at most (groups sharing a card decide apart)
    consensus = defaultdict(list)
    for c in Consensus.objects.filter(turn__in=[t.pk for t in world.turns], is_current=True):
        consensus[(c.turn_id, c.group_id)].append(c)
    strays = [key for key in consensus if key[1] != world.group.pk]
    assert not strays, f"consensus in a group the cards are not assigned to: {strays}"
    for turn in world.turns:
        state = states.get(turn.pk)
        status, round = (state.status, state.round) if state else (CardStatus.OPEN, 1)
        sets = [
            current[(turn.pk, who, round)][0]
            for who in world.annotator_ids
            if (turn.pk, who, round) in current
        ]
        where = f"card {turn.pk} ({status}, round {round}, {len(sets)}/{n} labelled: {sets})"
        decided = consensus[(turn.pk, world.group.pk)]
        assert len(decided) <= 1, f"{where}: {len(decided)} current consensus in its group"
        assert (status == CardStatus.AGREED) == bool(decided), f"{where}: consensus {decided}"
        if status == CardStatus.OPEN:
            assert round == 1 and len(sets) < n, f"{where}: should have left round 1"
        elif status == CardStatus.DISPUTED:
            assert round >= 2 and len(sets) < n, f"{where}: should have moved on"
        elif status == CardStatus.ESCALATED:
            assert len(sets) == n and len(set(sets)) > 1, f"{where}: escalated without dispute"
            assert round - 1 >= study.discussion_rounds, f"{where}: escalated too early"
        if decided:
            check_consensus(world, current, decided[0], where)


def check_consensus(world: World, current: dict, consensus: Consensus, where: str) -> None:
    assert consensus.group_id == world.group.pk, f"{where}: consensus of another group"
    sets = [
        current.get((consensus.turn_id, who, consensus.from_round), (None,))[0]
        for who in world.annotator_ids
    ]
    method, codes = consensus.method, consensus.codes
    if method == Method.UNANIMOUS:
        assert consensus.from_round == 1, f"{where}: unanimous from round {consensus.from_round}"
    elif method == Method.DISCUSSION:
        assert consensus.from_round >= 2, f"{where}: discussion consensus from round 1"
    # a group of one annotator has no rounds: their labels are its consensus, in any round
    single = len(world.annotator_ids) == 1
    if method in (Method.UNANIMOUS, Method.DISCUSSION, Method.SINGLE):
        assert (method == Method.SINGLE) == single, (
            f"{where}: {method} consensus in a group of {len(world.annotator_ids)}"
        )
        assert consensus.decided_by_id is None, f"{where}: {method} with a decider"
        assert set(sets) == {codes}, f"{where}: {method} consensus {codes} from labels {sets}"
        return
    assert method == Method.MODERATOR, f"{where}: unknown method {method}"
    deciders = {world.people["lead"].pk, world.people["moderator"].pk} - world.annotator_ids
    assert consensus.decided_by_id in deciders, (
        f"{where}: moderator consensus decided by user id {consensus.decided_by_id}, "
        f"who may not decide it"
    )
    assert consensus.rationale.strip(), f"{where}: a decision without a rationale"


TRACKED = {
    "Annotation": lambda w: Annotation.objects.filter(turn__conversation__study_id=w.study_id),
    "Consensus": lambda w: Consensus.objects.filter(group__study_id=w.study_id),
    "Comment": lambda w: Comment.objects.filter(turn__conversation__study_id=w.study_id),
    "Proposal": lambda w: Proposal.objects.filter(study_id=w.study_id),
}


def check_nothing_deleted(world: World, seen: dict[str, set[int]]) -> None:
    """Rows seen once stay (so no count ever decreases)."""
    for name, rows in TRACKED.items():
        ids = set(rows(world).values_list("pk", flat=True))
        gone = seen.setdefault(name, set()) - ids
        assert not gone, f"{name} rows {sorted(gone)} were deleted"
        seen[name] = ids


def check_loader(world: World, rows: list[Row], round: int) -> None:
    """The agreement job's loader reads exactly the current labels of the round."""
    study = world.study()
    names = {u.pk: u.username for u in world.people.values()}
    expected = Counter(
        (r.turn_id, names[r.annotator_id], r.codes)
        for r in rows
        if r.is_current and r.round == round
    )
    for axis, (records, _codes, _consensus) in load_records(study, round).items():
        loaded = Counter(
            zip(records["card"].tolist(), records["annotator"], records["labels"], strict=True)
        )
        assert loaded == expected, (
            f"agreement loader, axis {axis}, round {round}: read {dict(loaded)}, "
            f"the rows are {dict(expected)}"
        )


def check_report_counts(world: World, rows: list[Row], report: dict) -> None:
    """The report's counts (AGREEMENT.md: n_cards, n_annotators, n_annotations,
    n_pairable_cards, each pair's common cards) equal the round-1 rows."""
    names = {u.pk: u.username for u in world.people.values()}
    by_card: dict[int, set[str]] = defaultdict(set)
    for r in rows:
        if r.is_current and r.round == 1:
            by_card[r.turn_id].add(names[r.annotator_id])
    annotators = set().union(*by_card.values()) if by_card else set()
    counts = {
        "n_cards": len(by_card),
        "n_annotators": len(annotators),
        "n_annotations": sum(len(who) for who in by_card.values()),
        "n_pairable_cards": sum(1 for who in by_card.values() if len(who) >= 2),
    }
    got = {key: report[key] for key in counts}
    assert got == counts, f"report counts {got}, the rows give {counts}"
    common = {
        f"{a}|{b}": sum(1 for who in by_card.values() if {a, b} <= who)
        for a, b in combinations(sorted(annotators), 2)
    }
    reported = {pair: p["n_common_cards"] for pair, p in report.get("pairs", {}).items()}
    expected = {pair: n for pair, n in common.items() if n or pair in reported}
    assert reported == expected, f"pairs' common cards {reported}, the rows give {expected}"
