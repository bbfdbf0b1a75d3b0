"""The move of a study to a new taxonomy version: the mapping composed (Carrier), what a
move does (plan_counts, preview, the confirmation's words), and the move itself (evolve,
move_study). The package's docstring gives the rules."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models import Exists, Max, OuterRef

from taxonomy.models import TaxonomyVersion, Type

from ..models import (
    Annotation,
    CardState,
    CardStatus,
    Consensus,
    Episode,
    EpisodeJudgement,
    Group,
    Method,
    ProposalDecided,
    Study,
    StudyGold,
    TaxonomyMove,
)
from ..models.queue import rebuild

# rows carried per round trip
CHUNK = 2000


class EvolutionError(ValueError):
    """A change or a move that cannot be made as asked; nothing was changed."""


# -- the mapping -------------------------------------------------------------------------------


class Carrier:
    """Carries label sets of any earlier version of the lineage to `new`: the mappings of
    every version between composed, once per source version."""

    def __init__(self, new: TaxonomyVersion) -> None:
        self.new = new
        self._steps: dict[int, list[tuple[dict[str, list[str]], set[str]]]] = {}

    def steps(self, version_id: int) -> list[tuple[dict[str, list[str]], set[str]]]:
        """[(code_map, its split codes)] of every version from `version_id`'s child to new."""
        if version_id not in self._steps:
            chain, v = [], self.new
            while v.pk != version_id:
                if v.parent_id is None:
                    raise EvolutionError(
                        f"labels under taxonomy version id {version_id} are not of the "
                        f"lineage of {self.new}: nothing was changed"
                    )
                chain.append((v.code_map(), v.split_codes()))
                v = v.parent
            self._steps[version_id] = chain[::-1]
        return self._steps[version_id]

    def route(self, code: str, version_id: int) -> tuple[list[str], bool]:
        """Where `code` of version `version_id` goes in `new`, and whether a split lies on
        the way: one code (kept, renamed, merged), the codes of a recast type (all of them,
        one per new axis), or the parts of a split (its annotator chooses). A code the
        mapping does not carry is an error, never a drop."""
        targets, split = [code], False
        for step, split_codes in self.steps(version_id):
            out: list[str] = []
            for t in targets:
                if not step.get(t):
                    raise EvolutionError(
                        f"type code {t!r} has no place in the mapping to {self.new}: "
                        "nothing was changed (a label is never dropped silently)"
                    )
                split = split or t in split_codes
                out += step[t]
            targets = list(dict.fromkeys(out))
        return targets, split

    def targets(self, code: str, version_id: int) -> list[str]:
        """route()'s codes."""
        return self.route(code, version_id)[0]

    def carry(self, codes: Iterable[str], version_id: int) -> tuple[frozenset[str], tuple]:
        """(the carried codes, the codes waiting for a split side) of one label set."""
        carried: set[str] = set()
        pending = []
        for code in codes:
            targets, split = self.route(code, version_id)
            if split:
                pending.append(code)
            else:
                carried.update(targets)
        return frozenset(carried), tuple(sorted(pending))


# -- what a move does --------------------------------------------------------------------------


def plan_counts(study: Study, new: TaxonomyVersion, dissolved: list | None = None) -> dict:
    """How many rows the move of `study` to `new` carries and how: what the confirmation
    page says and the move records. A handful of counting queries, and the disputes the move
    dissolves (`dissolved`: dissolved_disputes(), when the caller has it)."""
    if dissolved is None:
        dissolved = dissolved_disputes(study, Carrier(new))
    code_map = new.code_map()
    split = new.split_codes()
    recoded = {c for c, t in code_map.items() if c not in split and t and t != [c]}
    annotations = Annotation.objects.filter(turn__conversation__study=study, is_current=True)
    consensus = Consensus.objects.filter(group__study=study, is_current=True)
    gold = StudyGold.objects.filter(study=study, is_current=True)

    def using(rows, codes: set[str]) -> int:
        if not codes:
            return 0
        return rows.filter(types__code__in=codes).values("pk").distinct().count()

    split_rows = annotations.filter(types__code__in=split) if split else annotations.none()
    return {
        "annotations": annotations.count(),
        "annotations_recoded": using(annotations, recoded),
        "annotations_pending": using(annotations, split),
        "cards_queued": split_rows.values("turn_id").distinct().count(),
        "consensus": consensus.count(),
        "consensus_recoded": using(consensus, recoded),
        "consensus_to_moderator": using(consensus, split),
        "study_gold": gold.count(),
        "study_gold_recoded": using(gold, recoded),
        "study_gold_reopened": using(gold, split),
        "disputes_dissolved": len(dissolved),
        "episode_judgements": EpisodeJudgement.objects.filter(
            episode__conversation__study=study, is_current=True
        ).count(),
        "episode_run_labels": _with_run_labels(study).count(),
    }


def _with_run_labels(study: Study):
    """The study's episodes holding an extraction run's labels (on the study's version)."""
    return Episode.objects.filter(conversation__study=study).exclude(run_labels={})


def dissolved_disputes(study: Study, carrier: Carrier) -> list[tuple[CardState, int, frozenset]]:
    """The disputed and escalated cards (no consensus yet) whose label sets of the round that
    disputed them are identical once carried by `carrier` (a merge joined the very types they
    differed on), none waiting for a split side: [(state, that round, the common set)]. Read
    from the current rows before the move; the move then agrees them (unanimous from round 1,
    discussion later), as it would have had the sets been given on the new version. The old
    rows keep the original disagreement, and the discussion page shows it."""
    states = CardState.objects.filter(
        group__study=study, status__in=(CardStatus.DISPUTED, CardStatus.ESCALATED)
    )
    # a card decided in its group (another group sharing it may still dispute it)
    decided = Consensus.objects.filter(
        turn_id=OuterRef("turn_id"), group_id=OuterRef("group_id"), is_current=True
    )
    states = list(states.exclude(Exists(decided)).order_by("pk"))
    members: dict[int, set[int]] = {}
    for group_id, user_id in Group.annotators.through.objects.filter(
        group__study=study
    ).values_list("group_id", "user_id"):
        members.setdefault(group_id, set()).add(user_id)
    out = []
    for start in range(0, len(states), CHUNK):
        chunk = states[start : start + CHUNK]
        rows = list(
            Annotation.objects.filter(turn_id__in={s.turn_id for s in chunk}, is_current=True)
            .values_list("pk", "turn_id", "annotator_id", "round", "taxonomy_version_id")
            .exclude(split_pending__gt="")
        )
        codes = _codes_of(Annotation, [r[0] for r in rows])
        sets: dict[tuple[int, int], dict[int, frozenset]] = {}
        for pk, turn_id, annotator_id, rnd, version_id in rows:
            carried, pending = carrier.carry(codes.get(pk, ()), version_id)
            if not pending:
                sets.setdefault((turn_id, rnd), {})[annotator_id] = carried
        for state in chunk:
            rnd = state.round - 1 if state.status == CardStatus.DISPUTED else state.round
            who = members.get(state.group_id, set())
            given = sets.get((state.turn_id, rnd), {})
            if len(who) < 2 or not who <= given.keys():
                continue
            labels = {given[user_id] for user_id in who}
            if len(labels) == 1:
                out.append((state, rnd, labels.pop()))
    return out


def _agree(dissolved: list[tuple[CardState, int, frozenset]], types: dict[str, int]) -> None:
    """The dissolved disputes agreed on the study's (new) version, from the round that
    disputed them."""
    for state, rnd, codes in dissolved:
        state.status, state.round = CardStatus.AGREED, rnd
        state.save(update_fields=["status", "round", "updated_at"])
        method = Method.UNANIMOUS if rnd == 1 else Method.DISCUSSION
        Consensus.create_for(state, method, [types[code] for code in codes])


def describe_changes(new: TaxonomyVersion) -> dict[str, list[dict]]:
    """new.changes() in names and codes, for pages and the move's record."""
    changes = new.changes()
    return {
        "added": [
            {"name": t.name, "code": t.code, "category": t.category.name} for t in changes["added"]
        ],
        "renamed": [{"old": old, "name": t.name, "code": t.code} for old, t in changes["renamed"]],
        "merged": [
            {
                "from": [{"name": s.name, "code": s.code} for s in sources],
                "into": {"name": t.name, "code": t.code},
            }
            for sources, t in changes["merged"]
        ],
        "split": [
            {
                "from": {"name": old.name, "code": old.code},
                "into": [
                    {"name": t.name, "code": t.code, "definition": t.definition} for t in parts
                ],
            }
            for old, parts in changes["split"]
        ],
        "recast": [
            {
                "from": {"name": old.name, "code": old.code, "axis": old.axis.name},
                "into": [{"name": t.name, "code": t.code, "axis": t.axis.name} for t in parts],
            }
            for old, parts in changes["recast"]
        ],
    }


def summary(study: Study, new: TaxonomyVersion) -> dict:
    """What moving `study` to `new` changes: the types and the rows, as the confirmation
    page says it."""
    return {
        "from_version": str(study.taxonomy_version),
        "to_version": str(new),
        "changes": describe_changes(new),
        "counts": plan_counts(study, new),
    }


class _Rollback(Exception):
    pass


def _rolled_back(version: TaxonomyVersion, spec: dict, said) -> dict:
    """said(new) of the version `spec` derives from `version`, in a transaction rolled
    back: what confirming would make, with nothing written."""
    result: dict = {}
    try:
        with transaction.atomic():
            try:
                new, _ = version.derive(**spec)
            except ValueError as e:
                raise EvolutionError(f"{e}. Nothing was changed.") from None
            result = said(new)
            raise _Rollback
    except _Rollback:
        pass
    return result


def preview(study: Study, spec: dict) -> dict:
    """What evolve(study, spec) would do, with nothing written: the same derive and counts
    rolled back, so the confirmation says exactly what confirming does. Raises
    EvolutionError for a change that cannot be made."""
    return _rolled_back(study.taxonomy_version, spec, lambda new: summary(study, new))


def accept_preview(proposal, category: str | None) -> dict:
    """What accepting `proposal` into `category` would make (Proposal.accept: the version
    with the type; no label moves, codes are stable), with nothing written. Raises what
    accept raises for a decided proposal or an unknown category."""
    proposal.refresh_from_db()
    if not proposal.is_pending:
        raise ProposalDecided(proposal)
    current = proposal.study.taxonomy_version
    proposal.check_category(current, category)
    spec = {
        "add": [
            {
                "name": proposal.name,
                "definition": proposal.definition,
                "axis": proposal.axis_code,
                "category": category,
            }
        ]
    }
    return _rolled_back(
        current,
        spec,
        lambda new: {
            "from_version": str(current),
            "to_version": str(new),
            "changes": describe_changes(new),
        },
    )


def evolve(study: Study, spec: dict, by=None, *, expected_version: int | None = None):
    """Derive the new version from the study's and move the study to it, in one
    transaction. `expected_version`: the version id the confirmation was made against; a
    study that has moved since is refused (the confirmation no longer says what happens)."""
    with transaction.atomic():
        study = (
            Study.objects.select_for_update().select_related("taxonomy_version").get(pk=study.pk)
        )
        if expected_version is not None and study.taxonomy_version_id != expected_version:
            raise EvolutionError(
                f"The study's taxonomy changed since this confirmation (it is now "
                f"{study.taxonomy_version}): review the changes again. Nothing was changed."
            )
        _refuse_while_pending(study)
        try:
            new, _ = study.taxonomy_version.derive(**spec)
        except ValueError as e:
            raise EvolutionError(f"{e}. Nothing was changed.") from None
        return move_study(study, new, by)


def _refuse_while_pending(study: Study) -> None:
    waiting = pending_in(study).count()
    if waiting:
        raise EvolutionError(
            f"{waiting} label{'s' if waiting != 1 else ''} still wait for their annotators "
            f"to choose a side of a split type of {study.taxonomy_version}; a new version "
            "waits until they have, so that no side is guessed. Nothing was changed."
        )


def move_study(study: Study, new: TaxonomyVersion, by=None) -> TaxonomyMove:
    """Carry every current annotation, consensus and study-level gold of `study` to `new`
    (derived from the study's version), and switch the study to it."""
    with transaction.atomic():
        study = (
            Study.objects.select_for_update().select_related("taxonomy_version").get(pk=study.pk)
        )
        old = study.taxonomy_version
        if new.parent_id != old.pk:
            raise EvolutionError(
                f"{new} is not derived from {old}, the study's version: nothing was changed"
            )
        _refuse_while_pending(study)
        carrier = Carrier(new)
        dissolved = dissolved_disputes(study, carrier)  # read before the rows are carried
        counts = plan_counts(study, new, dissolved)
        move = TaxonomyMove.objects.create(
            study=study, from_version=old, to_version=new, moved_by=by, counts=counts
        )
        types = dict(Type.objects.filter(axis__version=new).values_list("code", "pk"))
        _carry_annotations(study, move, carrier, types)
        split = _carry_decisions(
            Consensus,
            Consensus.objects.filter(group__study=study),
            ("turn_id", "group_id", "method", "from_round"),
            move,
            carrier,
            types,
        )
        for turn_id, group_id in split:
            # the moderator decides a split consensus on the new version
            CardState.objects.filter(turn_id=turn_id, group_id=group_id).update(
                status=CardStatus.ESCALATED
            )
        _carry_decisions(
            StudyGold,
            StudyGold.objects.filter(study=study),
            ("study_id", "turn_id", "method"),
            move,
            carrier,
            types,
        )
        _carry_judgements(study, move, carrier)
        _carry_run_labels(study, move, carrier)
        study.taxonomy_version = new
        study.save(update_fields=["taxonomy_version"])
        _agree(dissolved, types)
        # the annotators' queues from the carried rows (models/queue.py), in the same
        # transaction: what is done stays done, whatever the move retired or carried
        rebuild(study.pk)
        new.freeze()
    return move


def _codes_of(model, ids: list[int]) -> dict[int, list[str]]:
    through = model.types.through
    owner = f"{model._meta.model_name}_id"
    out: dict[int, list[str]] = {}
    rows = through.objects.filter(**{f"{owner}__in": ids}).values_list(owner, "type__code")
    for pk, code in rows:
        out.setdefault(pk, []).append(code)
    return out


def _links(model, rows: list, sets: list[Iterable[str]], types: dict[str, int]) -> None:
    through = model.types.through
    owner = f"{model._meta.model_name}_id"
    through.objects.bulk_create(
        through(**{owner: row.pk, "type_id": types[code]})
        for row, codes in zip(rows, sets, strict=True)
        for code in sorted(codes)
    )


def _chunks(current, last: int):
    """The ids of `current` up to `last`, a chunk at a time; each chunk is retired by the
    caller before the next is read (so the rows carried meanwhile are never read)."""
    while chunk := list(
        current.filter(pk__lte=last).order_by("pk").values_list("pk", flat=True)[:CHUNK]
    ):
        yield chunk


# an evidence quote's place (annotation/evidence.py): carried with its quote
SPAN_FIELDS = (
    "evidence_turn_id",
    "evidence_part",
    "evidence_part_index",
    "evidence_start",
    "evidence_end",
)


def _carry_annotations(study: Study, move: TaxonomyMove, carrier: Carrier, types) -> None:
    current = Annotation.objects.filter(turn__conversation__study=study, is_current=True)
    fields = (
        "pk",
        "turn_id",
        "annotator_id",
        "round",
        "taxonomy_version_id",
        "note",
        "evidence",
        *SPAN_FIELDS,
        "confidence",
        "source",
        "created_at",
    )

    def successor(r: dict, pending) -> Annotation:
        return Annotation(
            turn_id=r["turn_id"],
            annotator_id=r["annotator_id"],
            round=r["round"],
            taxonomy_version=move.to_version,
            note=r["note"],
            evidence=r["evidence"],
            **{name: r[name] for name in SPAN_FIELDS},  # where the quote is from
            confidence=r["confidence"],
            source=r["source"],
            # when the annotator gave the label: a carry is not a new judgment
            created_at=r["created_at"],
            carried_from_id=r["pk"],
            split_pending=" ".join(pending),
        )

    _carry_rows(Annotation, current, fields, move, carrier, types, successor)


def _carry_decisions(model, rows, own: tuple, move, carrier: Carrier, types) -> set[tuple]:
    """Carry the current decisions (consensus or study gold) of `rows`; returns the (turn,
    group) of those with a split type, retired without a successor."""
    fields = ("pk", "taxonomy_version_id", "decided_by_id", "decided_at", "rationale", *own)
    split: set[tuple] = set()

    def successor(r: dict, pending):
        if pending:
            split.add((r["turn_id"], r.get("group_id")))
            return None
        return model(
            **{f: r[f] for f in own},
            decided_by_id=r["decided_by_id"],
            decided_at=r["decided_at"],
            rationale=r["rationale"],
            taxonomy_version=move.to_version,
            carried_from_id=r["pk"],
        )

    _carry_rows(model, rows.filter(is_current=True), fields, move, carrier, types, successor)
    return split


def _carry_rows(model, current, fields, move, carrier: Carrier, types, successor) -> None:
    """Retire the `current` rows of `model` (annotations or decisions) chunk by chunk and
    write the successor of each under the move's new version: `successor(row's fields,
    pending split codes)`, or None for a row retired without one."""
    last = current.aggregate(n=Max("pk"))["n"] or 0
    for chunk in _chunks(current, last):
        # retired first: the partial unique index allows one current row per label
        model.objects.filter(pk__in=chunk).update(is_current=False, retired_by=move)
        codes = _codes_of(model, chunk)
        new_rows, sets = [], []
        for r in model.objects.filter(pk__in=chunk).order_by("pk").values(*fields):
            carried, pending = carrier.carry(codes.get(r["pk"], ()), r["taxonomy_version_id"])
            row = successor(r, pending)
            if row is not None:
                new_rows.append(row)
                sets.append(carried)
        _links(model, model.objects.bulk_create(new_rows), sets, types)


def carry_labels(carrier: Carrier, labels: dict, version_id: int, axes: dict) -> tuple:
    """An episode judgement's labels ({axis: [codes]}) of version `version_id` carried to
    the carrier's version: (the labels {axis: [codes]} in the new version's type order, the
    codes waiting for a split side). `axes`: {new code: (axis code, its position)}."""
    codes = [c for cs in (labels or {}).values() for c in cs]
    carried, pending = carrier.carry(codes, version_id)
    out: dict[str, list[str]] = {}
    for code in sorted(carried, key=lambda c: axes[c][1]):
        out.setdefault(axes[code][0], []).append(code)
    return out, pending


def _carry_judgements(study: Study, move: TaxonomyMove, carrier: Carrier) -> None:
    """Carry the current episode judgements of `study` (their labels through the mapping);
    a judgement holding a split type stops the move: a judgement cannot wait for a side."""
    new = move.to_version
    axes = {t.code: (t.axis.code, i) for i, t in enumerate(new.type_list())}
    current = EpisodeJudgement.objects.filter(episode__conversation__study=study, is_current=True)
    kept = ("episode_id", "annotator_id", "group_id", "round", "valid", "invalid_reason",
            "source", "created_at")  # fmt: skip
    fields = ("pk", "labels", "taxonomy_version_id", *kept)
    last = current.aggregate(n=Max("pk"))["n"] or 0
    for chunk in _chunks(current, last):
        new_rows = []
        for r in EpisodeJudgement.objects.filter(pk__in=chunk).order_by("pk").values(*fields):
            labels, pending = carry_labels(carrier, r["labels"], r["taxonomy_version_id"], axes)
            if pending:
                raise EvolutionError(
                    f"episode {r['episode_id']}'s judgement (round {r['round']}) holds "
                    f"{', '.join(pending)}, split in {new}: an episode judgement cannot wait "
                    "for its annotator's side. Nothing was changed."
                )
            new_rows.append(
                EpisodeJudgement(
                    **{f: r[f] for f in kept},
                    labels=labels,
                    taxonomy_version=new,
                    carried_from_id=r["pk"],
                )
            )
        EpisodeJudgement.objects.filter(pk__in=chunk).update(is_current=False, retired_by=move)
        EpisodeJudgement.objects.bulk_create(new_rows)


def _carry_run_labels(study: Study, move: TaxonomyMove, carrier: Carrier) -> None:
    """Carry the extraction runs' labels of the study's episodes (Episode.run_labels, on the
    old version as the study's judgements were) in place: the run's accuracy is then scored
    on the new version's codes. A split type stops the move: a model cannot pick a side.
    The run's own file keeps its labels as it wrote them."""
    new, old = move.to_version, move.from_version
    axes = {t.code: (t.axis.code, i) for i, t in enumerate(new.type_list())}
    changed = []
    for episode in _with_run_labels(study).only("pk", "run_labels").order_by("pk").iterator():
        labels, pending = carry_labels(carrier, episode.run_labels, old.pk, axes)
        if pending:
            raise EvolutionError(
                f"episode {episode.pk}'s extraction run labelled it {', '.join(pending)}, "
                f"split in {new}: a run's label cannot wait for a side. Nothing was changed."
            )
        if labels != episode.run_labels:
            episode.run_labels = labels
            changed.append(episode)
    Episode.objects.bulk_update(changed, ["run_labels"], batch_size=1000)


def pending_in(study: Study):
    """The study's current labels waiting for their annotator's side of a split type."""
    return Annotation.objects.filter(turn__conversation__study=study, is_current=True).exclude(
        split_pending=""
    )
