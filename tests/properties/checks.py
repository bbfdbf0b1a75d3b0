"""The invariants the state machine checks after every step, on the rows themselves, per
card and group (a card shared by two groups has a state, a consensus and a thread in each).
Each takes what the machine remembers (its model) and the database, and fails naming the
card, the group, the annotator and the round; check_isolated compares each group's rows
before and after a step that acted in another group (or in none)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations

from django.db.models import CharField, Value

from annotation.agreement.data import NO_GROUP, load_records
from annotation.models import (
    Annotation,
    Assignment,
    CardState,
    CardStatus,
    Comment,
    Consensus,
    Group,
    Method,
    Proposal,
)
from tests.report.helpers import pair_name

from .world import Seats, World

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


def round1_snapshot(rows: list[Row], turn_id: int, annotator_ids: set[int]) -> tuple:
    """The round-1 rows of one group's annotators on a card, history included."""
    return tuple(
        (r.pk, r.annotator_id, r.is_current, r.codes, r.note)
        for r in rows
        if r.turn_id == turn_id and r.round == 1 and r.annotator_id in annotator_ids
    )


CardKey = tuple[int, str]  # (turn id, group name)


def states_of(world: World) -> dict[CardKey, CardState]:
    """The cards' states, one per card and group: a state in a group the card is not
    assigned to (in the machine's model) is a card moved by someone who does not label it
    there."""
    names = {seats.group.pk: name for name, seats in world.groups.items()}
    conversation = {t.pk: t.conversation_id for t in world.turns}
    out, strays = {}, []
    for s in CardState.objects.filter(turn__in=list(conversation)):
        name = names.get(s.group_id)
        if name not in world.assigned[conversation[s.turn_id]]:
            strays.append(s)
        out[(s.turn_id, name)] = s
    assert not strays, f"card states in a group the cards are not assigned to: {strays}"
    return out


def status_of(states: dict[CardKey, CardState], key: CardKey) -> tuple[str, int]:
    """(status, round under way); a card nobody labelled in the group has no row: open."""
    state = states.get(key)
    return (state.status, state.round) if state else (CardStatus.OPEN, 1)


def check_round1_frozen(
    world: World, rows: list[Row], states: dict[CardKey, CardState], frozen: dict[CardKey, tuple]
) -> None:
    """Once a card leaves round 1 in a group, that group's round-1 rows on it never change
    (another group sharing the card may still be in its round 1): snapshot them the first
    time the card is seen out of "open" in the group, compare ever after."""
    for key, state in states.items():
        turn_id, name = key
        if state.status == CardStatus.OPEN:
            assert key not in frozen, f"card {turn_id} went back to round 1 (open) in {name}"
            continue
        now = round1_snapshot(rows, turn_id, world.groups[name].ids)
        if key not in frozen:
            frozen[key] = now
        assert now == frozen[key], (
            f"card {turn_id} left round 1 in group {name}, yet its round-1 rows there "
            f"changed: {frozen[key]} -> {now}"
        )


def current_consensus(world: World) -> dict[CardKey, list[Consensus]]:
    """{(turn, group name): its current consensus rows}; one in a group the card is not
    assigned to fails."""
    names = {seats.group.pk: name for name, seats in world.groups.items()}
    conversation = {t.pk: t.conversation_id for t in world.turns}
    rows = Consensus.objects.filter(turn__in=list(conversation), is_current=True)
    out: dict[CardKey, list[Consensus]] = defaultdict(list)
    for c in rows.prefetch_related("types").order_by("pk"):
        name = names.get(c.group_id)
        assert name in world.assigned[conversation[c.turn_id]], (
            f"consensus {c} in a group the card is not assigned to"
        )
        out[(c.turn_id, name)].append(c)
    return out


def check_states_and_consensus(
    world: World, rows: list[Row], states: dict[CardKey, CardState]
) -> None:
    """In every group, each of its cards' state agrees with the group's labels, and its
    consensus there (one current at most per card and group: groups sharing a card decide
    apart) says how it arose, in that group's rounds."""
    current = current_labels(rows)
    consensus = current_consensus(world)
    for name, seats in world.groups.items():
        n = len(seats.ids)
        for turn in world.turns_of(name):
            status, round = status_of(states, (turn.pk, name))
            sets = [
                current[(turn.pk, who, round)][0]
                for who in seats.ids
                if (turn.pk, who, round) in current
            ]
            where = (
                f"card {turn.pk} in group {name} ({status}, round {round}, "
                f"{len(sets)}/{n} labelled: {sets})"
            )
            decided = consensus[(turn.pk, name)]
            assert len(decided) <= 1, f"{where}: {len(decided)} current consensus in the group"
            assert (status == CardStatus.AGREED) == bool(decided), f"{where}: consensus {decided}"
            if status == CardStatus.OPEN:
                assert round == 1 and len(sets) < n, f"{where}: should have left round 1"
            elif status == CardStatus.DISPUTED:
                assert round >= 2 and len(sets) < n, f"{where}: should have moved on"
            elif status == CardStatus.ESCALATED:
                assert len(sets) == n and len(set(sets)) > 1, f"{where}: escalated without dispute"
                assert round - 1 >= world.discussion_rounds, f"{where}: escalated too early"
            if decided:
                check_consensus(world, seats, current, decided[0], where)


def check_consensus(
    world: World, seats: Seats, current: dict, consensus: Consensus, where: str
) -> None:
    assert consensus.group_id == seats.group.pk, f"{where}: consensus of another group"
    sets = [
        current.get((consensus.turn_id, who, consensus.from_round), (None,))[0] for who in seats.ids
    ]
    method, codes = consensus.method, consensus.codes
    if method == Method.UNANIMOUS:
        assert consensus.from_round == 1, f"{where}: unanimous from round {consensus.from_round}"
    elif method == Method.DISCUSSION:
        assert consensus.from_round >= 2, f"{where}: discussion consensus from round 1"
    # a group of one annotator has no rounds: their labels are its consensus, in any round
    single = len(seats.ids) == 1
    if method in (Method.UNANIMOUS, Method.DISCUSSION, Method.SINGLE):
        assert (method == Method.SINGLE) == single, (
            f"{where}: {method} consensus in a group of {len(seats.ids)}"
        )
        assert consensus.decided_by_id is None, f"{where}: {method} with a decider"
        assert set(sets) == {codes}, f"{where}: {method} consensus {codes} from labels {sets}"
        return
    assert method == Method.MODERATOR, f"{where}: unknown method {method}"
    # the group's own moderator or the lead, never one of the group's annotators
    deciders = {world.people["lead"].pk, seats.moderator.pk} - seats.ids
    assert consensus.decided_by_id in deciders, (
        f"{where}: moderator consensus decided by user id {consensus.decided_by_id}, "
        f"who may not decide it"
    )
    assert consensus.rationale.strip(), f"{where}: a decision without a rationale"


def check_assignments(world: World) -> None:
    """The conversations' groups are the model's: assigned when built, or by an import
    naming another group (Group.check_seat permitting), never otherwise."""
    stored = defaultdict(set)
    rows = Assignment.objects.filter(conversation__study_id=world.study_id)
    for conversation_id, name in rows.values_list("conversation_id", "group__name"):
        stored[conversation_id].add(name)
    assert stored == world.assigned, f"assignments {dict(stored)}, expected {world.assigned}"


# -- isolation between groups --------------------------------------------------------------


@dataclass(frozen=True)
class GroupRows:
    """What belongs to one group: its card states, consensus, comments and labels."""

    states: tuple
    consensus: tuple
    comments: tuple
    labels: tuple


def group_rows(world: World, rows: list[Row]) -> dict[str, GroupRows]:
    """{group name: its rows} on the study's cards."""
    names: dict[int | None, str] = {seats.group.pk: name for name, seats in world.groups.items()}
    names[None] = "(none)"  # a comment in no group's thread: a change the checks name
    by_group: dict[str, dict[str, list]] = {name: defaultdict(list) for name in names.values()}
    turn_ids = [t.pk for t in world.turns]
    states = CardState.objects.filter(turn__in=turn_ids).order_by("pk")
    for group_id, *state in states.values_list("group_id", "pk", "turn_id", "status", "round"):
        by_group[names[group_id]]["states"].append(tuple(state))
    consensus = Consensus.objects.filter(turn__in=turn_ids).order_by("pk")
    fields = ("group_id", "pk", "turn_id", "method", "from_round", "is_current", "decided_by")
    for group_id, *row in consensus.values_list(*fields):
        by_group[names[group_id]]["consensus"].append(tuple(row))
    comments = Comment.objects.filter(turn__in=turn_ids).order_by("pk")
    for group_id, *row in comments.values_list("group_id", "pk", "turn_id", "author_id", "text"):
        by_group[names[group_id]]["comments"].append(tuple(row))
    for name, seats in world.groups.items():
        by_group[name]["labels"] = [r for r in rows if r.annotator_id in seats.ids]
    return {
        name: GroupRows(*(tuple(found[part]) for part in GroupRows.__dataclass_fields__))
        for name, found in by_group.items()
    }


def check_isolated(
    before: dict[str, GroupRows], after: dict[str, GroupRows], acting: str | None, step: str
) -> None:
    """A step acting in one group (None: in none) changed no other group's card states,
    consensus, comments or labels, on a card they share or any other."""
    for name in sorted(before):
        if name == acting:
            continue
        for part in GroupRows.__dataclass_fields__:
            was, now = getattr(before[name], part), getattr(after[name], part)
            assert was == now, (
                f"{step} (acting in group {acting or 'none'}) changed group {name}'s "
                f"{part}: {was} -> {now}"
            )


TRACKED = {
    "Annotation": lambda w: Annotation.objects.filter(turn__conversation__study_id=w.study_id),
    "Consensus": lambda w: Consensus.objects.filter(group__study_id=w.study_id),
    "Comment": lambda w: Comment.objects.filter(turn__conversation__study_id=w.study_id),
    "Proposal": lambda w: Proposal.objects.filter(study_id=w.study_id),
    "CardState": lambda w: CardState.objects.filter(group__study_id=w.study_id),
    "Assignment": lambda w: Assignment.objects.filter(group__study_id=w.study_id),
}


def check_nothing_deleted(world: World, seen: dict[str, set[int]]) -> None:
    """Rows seen once stay (so no count ever decreases). One query: the ids of every
    tracked table, united."""
    parts = [
        rows(world)
        .order_by()
        .annotate(table=Value(name, output_field=CharField()))
        .values_list("table", "pk")
        for name, rows in TRACKED.items()
    ]
    now: dict[str, set[int]] = {name: set() for name in TRACKED}
    for name, pk in parts[0].union(*parts[1:], all=True):
        now[name].add(pk)
    for name, ids in now.items():
        gone = seen.setdefault(name, set()) - ids
        assert not gone, f"{name} rows {sorted(gone)} were deleted"
        seen[name] = ids


def record_groups(world: World, rows: list[Row]) -> dict[int, str]:
    """{row pk: group name} as the loader names a record's group: the group in which its
    annotator labels the card, else the card's only group, else none."""
    turns = {t.pk: t for t in world.turns}
    users = {u.pk: u for u in world.people.values()}
    out = {}
    for r in rows:
        turn = turns[r.turn_id]
        name = world.group_of(users[r.annotator_id], turn)
        if name is None:
            groups = world.groups_of(turn)
            name = groups[0] if len(groups) == 1 else NO_GROUP
        out[r.pk] = name
    return out


def expected_gold(world: World) -> dict[int, frozenset[str]]:
    """The study-level gold (models.study_gold_of, no lead's decision in these studies): a
    card's consensus when every group it is assigned to has one and they all agree."""
    sets: dict[int, list[frozenset[str]]] = defaultdict(list)
    for (turn_id, _name), decided in current_consensus(world).items():
        sets[turn_id] += [c.codes for c in decided]
    turns = {t.pk: t for t in world.turns}
    return {
        turn_id: found[0]
        for turn_id, found in sets.items()
        if len(found) == len(world.groups_of(turns[turn_id])) and len(set(found)) == 1
    }


def check_loader(world: World, rows: list[Row], round: int) -> None:
    """The agreement job's loader reads exactly the current labels of the round, each with
    the group its annotator labels the card in, and the groups' study-level gold."""
    study = world.study()
    names = {u.pk: u.username for u in world.people.values()}
    groups = record_groups(world, rows)
    gold = expected_gold(world)
    for axis, (records, codes, consensus) in load_records(study, round).items():
        on_axis = frozenset(codes)
        expected = Counter(
            (r.turn_id, names[r.annotator_id], groups[r.pk], r.codes & on_axis)
            for r in rows
            if r.is_current and r.round == round
        )
        loaded = Counter(
            zip(
                records["card"].tolist(),
                records["annotator"],
                records["group"],
                records["labels"],
                strict=True,
            )
        )
        assert loaded == expected, (
            f"agreement loader, axis {axis}, round {round}: read {dict(loaded)}, "
            f"the rows are {dict(expected)}"
        )
        gold_here = {card: codes_ & on_axis for card, codes_ in gold.items()}
        assert dict(consensus) == gold_here, (
            f"agreement loader, axis {axis}: study-level gold {dict(consensus)}, "
            f"the groups' consensus give {gold_here}"
        )


def check_report_counts(world: World, rows: list[Row], report: dict) -> None:
    """The report's counts (AGREEMENT.md: n_cards, n_annotators, n_annotations,
    n_pairable_cards, each pair's common cards) equal the round-1 rows; pairs stay inside
    groups (an annotator of A and one of B on a shared card are no pair), and the report
    has a mean for each group that has round-1 labels."""
    names = {u.pk: u.username for u in world.people.values()}
    groups = record_groups(world, rows)
    by_card: dict[int, set[str]] = defaultdict(set)
    members: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r.is_current and r.round == 1:
            by_card[r.turn_id].add(names[r.annotator_id])
            members[groups[r.pk]].add(names[r.annotator_id])
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
        for group in members.values()
        for a, b in combinations(sorted(group), 2)
    }
    pairs = report.get("pairs", {})
    check_pair_keys(pairs, names)
    reported = {pair_name(p): p["n_common_cards"] for p in pairs.values()}
    assert reported == common, f"pairs' common cards {reported}, the rows give {common}"
    assert set(report.get("groups", {})) == set(members), (
        f"group means for {sorted(report.get('groups', {}))}, groups with labels {sorted(members)}"
    )


def check_pair_keys(pairs: dict, names: dict[int, str]) -> None:
    """A study report keys a pair by its two ids, and its entry names both (by their names'
    order)."""
    for key, p in pairs.items():
        a, b = p["a"], p["b"]
        assert key == f"{a['id']}|{b['id']}", (key, a, b)
        assert (names[a["id"]], names[b["id"]]) == (a["name"], b["name"]) and a["name"] < b["name"]


def check_between_groups(world: World, between: dict) -> None:
    """The agreement between the groups' consensus labels counts the cards that every
    pair of groups both decided (a current consensus in each)."""
    decided: dict[int, set[str]] = defaultdict(set)
    for turn_id, name in current_consensus(world):
        decided[turn_id].add(name)
    n = sum(1 for names in decided.values() if len(names) >= 2)
    pairs = {
        f"{a}|{b}": sum(1 for names in decided.values() if {a, b} <= names)
        for a, b in combinations(sorted(world.groups), 2)
    }
    expected = {pair: k for pair, k in pairs.items() if k}
    check_pair_keys(
        between["pairs"],
        dict(Group.objects.filter(study_id=world.study_id).values_list("pk", "name")),
    )
    reported = {pair_name(p): p["n_common_cards"] for p in between["pairs"].values()}
    assert (between["n_cards"], reported) == (n, expected), (
        f"between groups: {between['n_cards']} cards, pairs {reported}; the consensus rows "
        f"give {n} cards, pairs {expected}"
    )
