"""The episode files (issue 21), beside the turn files: the unit is the export's `unit`.

- `episode`, gold: one row per episode and group judging it (a group whose unit is
  `episode`, assigned the episode's conversation; an episode no such group judges has one
  row, group null), the episode's identity, goal and evidence, its state in the group
  (episodes/rounds.py), the group's consensus as the episode measures read it
  (episodes/measures.py: consensus_validity, deciding_rounds, gold_labels over
  episodes/report.load's data, the report's own reading), and the extraction run's own
  verdict, labels and confidence;
- `episode`, raw: one row per judgement, all revisions, in the order they were recorded;
- `coverage`: one row per coverage rating, all revisions (the only file: raw or not).

Separate files, not rows of the turn files: a judgement has no turn and a card no turn
range, and a research team reads each unit into its own DataFrame. Every row names the
episode (`episode`, `run`, `created_by`, `conversation`, `conversation_key`, `modality`,
`first_turn`, `last_turn`).

Blindness, as the turn files (the rules: episodes/blind.py): `blind_for=user` leaves out
the other annotators' judgements of the episodes whose round 1 is under way in a group
`user` annotates, and the consensus of those episodes; the episodes people wrote that
`user` may not see yet; the others' coverage ratings of a session `user` has not rated
yet. What a machine said (a judge's judgement rows, an extraction run's verdict, labels
and confidence) only for whoever may see the machine judges (blind.machines_visible_to:
leads, not while the agreement lock applies nor while they judge an episode in round 1)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

from django.db.models.fields.json import KeyTextTransform

from ..episodes import measures, report, rounds
from ..episodes.blind import (
    coverage_hidden_from,
    episodes_round1_hidden_from,
    episodes_unseen_by,
    machines_visible_to,
)
from ..models import (
    Assignment,
    CardStatus,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    EvidenceQuote,
    Group,
    Study,
    Unit,
)
from .columns import (
    CHUNK_SIZE,
    COVERAGE_COLUMNS,
    CSV_SEPARATOR,
    EPISODE_GOLD_COLUMNS,
    EPISODE_RAW_COLUMNS,
    RUN_VERDICT_COLUMNS,
    axis_columns,
)
from .writers import write

FLOATS = frozenset({"confidence"})
# a moderator's decision in the measures' judgements (episodes/measures.py, report.load)
MODERATOR = "moderator"


def episode_gold_columns(study: Study) -> list[str]:
    return [*EPISODE_GOLD_COLUMNS, *(a.column for a in axis_columns(study))]


def episode_raw_columns(study: Study) -> list[str]:
    return [*EPISODE_RAW_COLUMNS, *(a.column for a in axis_columns(study))]


def write_episodes(
    study: Study,
    path: Path | str,
    fmt: str,
    raw: bool = False,
    round: int | None = None,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[int], None] | None = None,
    blind_for=None,
) -> int:
    """Write the episode gold file (raw: every judgement) to `path`; returns its rows."""
    if raw:
        rows = episode_raw_rows(study, round=round, chunk_size=chunk_size, blind_for=blind_for)
        columns = episode_raw_columns(study)
    else:
        rows = episode_gold_rows(study, chunk_size=chunk_size, blind_for=blind_for)
        columns = episode_gold_columns(study)
    return _write(rows, columns, path, fmt, chunk_size, progress)


def write_coverage(
    study: Study,
    path: Path | str,
    fmt: str,
    chunk_size: int = CHUNK_SIZE,
    progress: Callable[[int], None] | None = None,
    blind_for=None,
) -> int:
    """Write every coverage rating to `path`; returns its rows."""
    rows = coverage_rows(study, chunk_size=chunk_size, blind_for=blind_for)
    return _write(rows, list(COVERAGE_COLUMNS), path, fmt, chunk_size, progress)


def _write(rows, columns, path, fmt, chunk_size, progress) -> int:
    rows = iter(rows)
    batches = iter(lambda: list(islice(rows, chunk_size)), [])
    return write(batches, columns, Path(path), fmt, progress, floats=FLOATS)


class _Reader:
    """What `blind_for` may not read of the study's episodes (nothing hidden for None)."""

    def __init__(self, study: Study, blind_for) -> None:
        self.user = blind_for
        if blind_for is None:
            self.hidden: set[int] = set()
            self.unseen: set[int] = set()
            self.unrated: set[int] = set()
            self.machines = True
        else:
            self.hidden = episodes_round1_hidden_from(blind_for, study)
            self.unseen = episodes_unseen_by(blind_for, study)
            self.unrated = coverage_hidden_from(blind_for, study)
            self.machines = machines_visible_to(blind_for, study, self.hidden)

    def others(self, annotator_id: int) -> bool:
        return self.user is None or annotator_id != self.user.pk


def _identity(study: Study, ids: list[int]) -> dict[int, dict]:
    """{episode id: its identity columns, goal and run verdict} for a chunk of episodes."""
    rows = Episode.objects.filter(pk__in=ids).values_list(
        "pk",
        "run__name",
        "created_by__username",
        "conversation_id",
        "conversation__external_id",
        "conversation__key",
        KeyTextTransform("modality", "conversation__metadata"),
        "first_turn",
        "last_turn",
        "goal",
        "run_valid",
        "run_invalid_reason",
        "run_labels",
        "confidence",
    )
    out = {}
    for pk, run, author, cid, external, key, modality, first, last, goal, *verdict in rows:
        out[pk] = {
            "episode": pk,
            "run": run or "",
            "created_by": author if run is None else None,
            "conversation": external,
            "conversation_key": key,
            "modality": modality,
            "first_turn": first,
            "last_turn": last,
            "_conversation_id": cid,
            "_goal": goal,
            "_verdict": verdict,
            "_from_run": run is not None,
        }
    return out


def _flat(labels: dict | None) -> list[str]:
    """A judgement's {axis: [codes]} as one sorted list of codes (the `labels` column)."""
    return sorted({c for codes in (labels or {}).values() for c in codes})


def _axes(study: Study, labels: dict | None) -> dict:
    """The per-axis columns of a judgement's labels (None: no labels, e.g. invalid)."""
    codes = None if labels is None else _flat(labels)
    return {axis.column: axis.pick(codes) for axis in axis_columns(study)}


def _public(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("_")}


# --- raw: every judgement ----------------------------------------------------------------


def episode_raw_rows(
    study: Study, round: int | None = None, chunk_size: int = CHUNK_SIZE, blind_for=None
) -> Iterator[dict]:
    """Every judgement of the study's episodes, all revisions, in the order they were
    recorded (`round`: that round's only), without what `blind_for` may not read."""
    reader = _Reader(study, blind_for)
    rows = EpisodeJudgement.objects.filter(episode__conversation__study=study).order_by("pk")
    if round is not None:
        rows = rows.filter(round=round)
    if reader.unseen:
        rows = rows.exclude(episode_id__in=reader.unseen)
    voters = _voters(study)
    axes = axis_columns(study)
    fields = (
        "pk", "episode_id", "group_id", "group__name", "annotator_id", "annotator__username",
        "round", "valid", "invalid_reason", "labels", "is_current", "source", "created_at",
        "taxonomy_version__taxonomy__slug", "taxonomy_version__number",
    )  # fmt: skip
    last_pk = 0
    while True:
        chunk = list(rows.filter(pk__gt=last_pk).values_list(*fields)[:chunk_size])
        episodes = _identity(study, sorted({row[1] for row in chunk}))
        for (
            _pk, episode, group_id, group, annotator_id, username, rnd, valid, reason, labels,
            is_current, source, created_at, slug, number,
        ) in chunk:  # fmt: skip
            if episode in reader.hidden and reader.others(annotator_id):
                continue  # round 1 under way for the reader: their own rows only
            if not reader.machines and annotator_id not in voters.get(group_id, ()):
                continue  # a machine judge's (or a removed seat's): the judges' data
            codes = _flat(labels) if valid else None
            yield {
                "study": study.slug,
                "group": group,
                **_public(episodes[episode]),
                "round": rnd,
                "annotator": username,
                "valid": valid,
                "invalid_reason": reason or None,
                "labels": codes,
                "is_current": is_current,
                "source": source,
                "created_at": created_at.isoformat(),
                "taxonomy_version": f"{slug} v{number}",
                **{axis.column: axis.pick(codes) for axis in axes},
            }
        if len(chunk) < chunk_size:
            return
        last_pk = chunk[-1][0]


def _voters(study: Study) -> dict[int, set[int]]:
    """{group id: its annotators' ids} of the study's groups."""
    out: dict[int, set[int]] = defaultdict(set)
    through = Group.annotators.through
    for g, u in through.objects.filter(group__study=study).values_list("group_id", "user_id"):
        out[g].add(u)
    return out


# --- gold: each episode's consensus per group -----------------------------------------------


def episode_gold_rows(study: Study, chunk_size: int = CHUNK_SIZE, blind_for=None) -> Iterator[dict]:
    """One row per episode and group judging it, in conversation and turn-range order: the
    episode, its state in the group, the group's consensus (the episode measures'), the
    run's own verdict (for whoever may see the machine judges)."""
    reader = _Reader(study, blind_for)
    groups = _episode_groups(study)
    consensus = _consensus(study, groups)
    states = _states(study, groups)
    axes = axis_columns(study)
    ids = [
        pk
        for pk in Episode.objects.filter(conversation__study=study)
        .order_by("conversation_id", "first_turn", "last_turn", "pk")
        .values_list("pk", flat=True)
        if pk not in reader.unseen
    ]
    for start in range(0, len(ids), chunk_size):
        chunk = ids[start : start + chunk_size]
        episodes = _identity(study, chunk)
        quotes = _evidence(chunk)
        for pk in chunk:
            episode = episodes[pk]
            run_valid, run_reason, run_labels, confidence = episode["_verdict"]
            machine = reader.machines and episode["_from_run"]
            verdict = {
                "run_valid": run_valid if machine else None,
                "run_invalid_reason": (run_reason or None) if machine else None,
                "run_labels": _flat(run_labels) if machine and run_labels else None,
                "confidence": confidence if machine else None,
            }
            assert set(verdict) == set(RUN_VERDICT_COLUMNS)
            for group_id, name in groups.get(episode["_conversation_id"], [(None, None)]):
                state = states.get((pk, group_id))
                decided = consensus.get((pk, group_id), {})
                if pk in reader.hidden:
                    decided = {}  # it would tell the others' round-1 judgements
                labels = decided.get("labels")
                yield {
                    "study": study.slug,
                    "group": name,
                    **_public(episode),
                    "goal": episode["_goal"],
                    "evidence": json.dumps(quotes.get(pk, []), ensure_ascii=False),
                    "status": "agreed" if decided.get("moderator") else _status(state),
                    "validity": decided.get("validity"),
                    "valid": decided.get("valid"),
                    "invalid_reason": decided.get("invalid_reason"),
                    "method": _method(state, decided),
                    "deciding_round": decided.get("deciding_round"),
                    "labels": None if labels is None else _flat(labels),
                    **verdict,
                    **{a.column: a.pick(None if labels is None else _flat(labels)) for a in axes},
                }


def _episode_groups(study: Study) -> dict[int, list[tuple[int, str]]]:
    """{conversation id: [(group id, name)]} of the groups judging its episodes, by name."""
    out: dict[int, list[tuple[int, str]]] = defaultdict(list)
    rows = (
        Assignment.objects.filter(group__study=study, group__unit=Unit.EPISODE)
        .order_by("group__name")
        .values_list("conversation_id", "group_id", "group__name")
    )
    for conversation, group, name in rows:
        out[conversation].append((group, name))
    return out


def _states(study: Study, groups: dict) -> dict[tuple[int, int], rounds.EpisodeRound]:
    """{(episode id, group id): its round state} of the episodes of the groups judging them."""
    ids = sorted({g for pairs in groups.values() for g, _ in pairs})
    judged = rounds.judged_of(group_ids=ids)
    voters = rounds.voters_of(ids)
    out = {}
    for pk, conversation in Episode.objects.filter(conversation__study=study).values_list(
        "pk", "conversation_id"
    ):
        for g, _ in groups.get(conversation, []):
            out[(pk, g)] = rounds.replay(
                judged.get((pk, g), {}), voters[g], study.discussion_rounds
            )
    return out


def _status(state: rounds.EpisodeRound | None) -> str | None:
    return state.status if state is not None else None


def _method(state: rounds.EpisodeRound | None, decided: dict) -> str | None:
    """How the group's consensus came: "moderator" where the measures' data holds the
    moderator's decision (report.load gives it in the judgements' list, `method`
    "moderator"), else the rounds' method once agreed (unanimous, single, discussion); None
    while they are under way, or without a consensus."""
    if not decided:
        return None
    if decided.get("moderator"):
        return MODERATOR
    if state is None or state.status in (CardStatus.OPEN, CardStatus.DISPUTED):
        return None
    if state.status == CardStatus.ESCALATED:
        return None
    return state.method


def _consensus(study: Study, groups: dict) -> dict[tuple[int, int], dict]:
    """{(episode id, group id): the group's consensus}, from the report's own data and rules
    (episodes/report.load, measures.consensus_validity, deciding_rounds, gold_labels), each
    group's judgements apart: validity ("valid", "invalid", "disputed"), `valid` (null when
    disputed), the invalid reason (the deciding round's, joined by "|" where they differ),
    the deciding round, and the gold labels (an identical valid judgement from every
    annotator in a round)."""
    data = report.load(study)
    names = {name: g for pairs in groups.values() for g, name in pairs}
    by_group: dict[str, list[dict]] = defaultdict(list)
    for j in data["judgements"]:
        by_group[j["group"]].append(j)
    out = {}
    for name, judgements in by_group.items():
        if name not in names:
            continue  # a group that labels turns: its judgements are no consensus
        group_id = names[name]
        validity = measures.consensus_validity(judgements)
        deciding = measures.deciding_rounds(judgements)
        gold = measures.gold_labels(judgements, {name: data["voters"].get(name, 0)})
        reasons: dict[int, set[str]] = defaultdict(set)
        moderated = set()
        for j in judgements:
            if deciding.get(j["episode"]) != j["round"]:
                continue
            if j.get("method") == MODERATOR:
                moderated.add(j["episode"])
        for j in judgements:
            if deciding.get(j["episode"]) != j["round"] or j["valid"]:
                continue
            # a decision settles its round: its reason, not the annotators' before it
            if j["episode"] in moderated and j.get("method") != MODERATOR:
                continue
            reasons[j["episode"]].add(j.get("invalid_reason") or "")
        for episode, verdict in validity.items():
            out[(episode, group_id)] = {
                "validity": verdict,
                "valid": {"valid": True, "invalid": False}.get(verdict),
                "invalid_reason": (
                    CSV_SEPARATOR.join(sorted(r for r in reasons[episode] if r)) or None
                    if verdict == "invalid"
                    else None
                ),
                "deciding_round": deciding.get(episode),
                "labels": gold.get(episode),
                "moderator": episode in moderated,
            }
    return out


def _evidence(ids: list[int]) -> dict[int, list[dict]]:
    """{episode id: its quotes in order}: turn (index), part, part_index, start, end, quote."""
    out: dict[int, list[dict]] = defaultdict(list)
    rows = (
        EvidenceQuote.objects.filter(episode_id__in=ids)
        .order_by("episode_id", "order", "pk")
        .values_list("episode_id", "turn__index", "part", "part_index", "start", "end", "quote")
    )
    for episode, turn, part, part_index, start, end, quote in rows:
        out[episode].append(
            {"turn": turn, "part": part, "part_index": part_index, "start": start, "end": end,
             "quote": quote}
        )  # fmt: skip
    return out


# --- coverage ratings ------------------------------------------------------------------------


def coverage_rows(study: Study, chunk_size: int = CHUNK_SIZE, blind_for=None) -> Iterator[dict]:
    """Every coverage rating of the study's sessions, all revisions, in the order they were
    recorded, without the others' ratings of a session `blind_for` has not rated yet."""
    reader = _Reader(study, blind_for)
    rows = CoverageRating.objects.filter(conversation__study=study).order_by("pk")
    fields = (
        "pk", "conversation_id", "group__name", "conversation__external_id", "conversation__key",
        KeyTextTransform("modality", "conversation__metadata"), "annotator_id",
        "annotator__username", "rating", "is_current", "source", "created_at",
    )  # fmt: skip
    last_pk = 0
    while True:
        chunk = list(rows.filter(pk__gt=last_pk).values_list(*fields)[:chunk_size])
        for (
            _pk, conversation_id, group, external, key, modality, annotator_id, username,
            rating, is_current, source, created_at,
        ) in chunk:  # fmt: skip
            if conversation_id in reader.unrated and reader.others(annotator_id):
                continue
            yield {
                "study": study.slug,
                "group": group,
                "conversation": external,
                "conversation_key": key,
                "modality": modality,
                "annotator": username,
                "rating": rating,
                "is_current": is_current,
                "source": source,
                "created_at": created_at.isoformat(),
            }
        if len(chunk) < chunk_size:
            return
        last_pk = chunk[-1][0]
