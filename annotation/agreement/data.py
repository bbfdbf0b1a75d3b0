"""The agreement report of a study, straight from the database (AGREEMENT.md).

    compute_study_report(study, round=1, n_boot=1000, seed=0, version=None) -> dict
    load_records(study, round=1, version=None) -> {axis code: (records, codes, consensus)}
    data_stamp(study) -> dict

The job, the `agreement` command and the API all go through `compute_study_report`, so they
give the same JSON. The rows come straight into integer arrays (rows.py: COPY on
PostgreSQL), become one uint64 label bitmask per record and axis, and are encoded once per
axis (stats.encode_axes); the report, the page's extras, the comparison with the gold and
the agreement between groups all take those arrays. No model instance, label set or
DataFrame is built per record: a million cards cost a few numpy passes. `load_records`
gives the same records as DataFrames of frozensets, for `stats.agreement_report` and tests.

Records: card = turn id, annotator = username, group = the name of the group in which the
annotator labels the card's conversation. Pairs are keyed by the users' ids ("12|7", in the
order of the names), each pair naming both (`a`, `b`: {id, name}), and pairs of groups
between groups by the groups' ids: a name may hold anything, "|" included. A conversation
may be assigned to several groups (a calibration set, an overlap share); one person labels
it in one of them only (Group.check_seat), so every record has one group. A conversation of
a single group gives that group to anyone's record (someone since removed from it); a
record of nobody seated, on a shared conversation, has no group. Pairs stay inside groups;
the study-wide measures (Krippendorff, Fleiss) span every annotator who rated the card.
Judges (e.g. an LLM judge) never vote: they are left out of the report and the extras,
compared with the gold only; `judge_annotators` names them. With judge runs (run_judge), a
round-1 result has a `judges` section (judge_data.py: the runs' scores against the gold,
the annotators beside them, the runs against each other, curves and dev/test thresholds).
Both are the leads' alone: access.report_result removes them, and each judge's row of
`versus_consensus`, from anyone else's copy.

Consensus: each group has its own on a shared card. The report's `consensus` (for
`prevalence` and `versus_consensus`: every annotator, judges too, against it, with
bootstrap intervals resampling the cards' conversations, versus.py, the job's n_boot and
seed) is the study-level gold (models.study_gold_of); the
axis's `between_groups` compares the groups' consensus labels on the cards several groups
decided: Cohen's kappa on sets and per label for each pair of groups (the pair keys of the
report, a group standing for an annotator).

An annotation with no type of an axis is the empty set on that axis ("no smell" there).

Taxonomy version (annotation/evolution/): by default the study's version and its current
labels, leaving out those still waiting for a split side (no record until their annotator
chooses). `version` may name a version the study moved away from: the report is then
computed on the labels that move retired, that version's labels as they stood, so an old
version's report stays what it was. The result names its version either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.contrib.auth import get_user_model
from django.utils import timezone

from taxonomy.models import TaxonomyVersion, Type

from ..episodes.report import compare, episode_measures
from ..models import Episode, Group, Study, TaxonomyMove
from .extras import extras_from_encoded
from .judge_data import DEV_SHARE, judges_section
from .rows import RECORD, count_per, label_writes, rank_ids, read_study, value_per
from .splitcheck import split_check_measures
from .stats import Encoded, Reference, encode_axes, report_from_encoded
from .teams import team_means
from .versus import versus_encoded

NO_GROUP = "(no group)"

Progress = Callable[[int, int, str], None]


def axis_codes(study: Study, version: TaxonomyVersion | None = None) -> dict[str, list[str]]:
    """{axis code: type codes} of the study's taxonomy version (or `version`), in the
    taxonomy's order."""
    version = version or study.taxonomy_version
    out: dict[str, list[str]] = {}
    types = Type.objects.filter(axis__version_id=version.pk).order_by(
        "axis__order", "axis_id", "category__order", "order", "id"
    )
    for axis, code in types.values_list("axis__code", "code"):
        out.setdefault(axis, []).append(code)
    for axis in version.axes.values_list("code", flat=True):
        out.setdefault(axis, [])  # an axis with no type yet still gets its (empty) report
    return out


def _view(study: Study, version: TaxonomyVersion | None) -> tuple[TaxonomyVersion, int | None]:
    """(the version, the id of the move away from it: None for the study's own)."""
    if version is None or version.pk == study.taxonomy_version_id:
        return study.taxonomy_version, None
    move = TaxonomyMove.objects.filter(study=study, from_version=version).first()
    if move is None:
        raise ValueError(
            f"{study.slug} never moved away from {version}: no labels of the study stand "
            f"under it (versions: {', '.join(str(v) for v in study.report_versions())})"
        )
    return version, move.pk


class _Labels:
    """Type id -> (axis, code) for the types the rows use, and label masks per owner."""

    def __init__(self, codes: dict[str, list[str]], type_ids: list[int]) -> None:
        self.codes = {axis: list(c) for axis, c in codes.items()}
        self.type_axis: dict[int, tuple[str, str]] = {}
        for pk, code, axis in Type.objects.filter(pk__in=type_ids).values_list(
            "pk", "code", "axis__code"
        ):
            self.type_axis[pk] = (axis, code)
            # A type of another taxonomy version (labels given before a new version) whose
            # code this version dropped: keep it as a label of the axis rather than fail.
            axis_list = self.codes.setdefault(axis, [])
            if code not in axis_list:
                axis_list.append(code)

    def masks(self, owner: np.ndarray, n_owners: int, types: np.ndarray) -> dict[str, np.ndarray]:
        """{axis: uint64 bitmask per owner (annotation, consensus) of its types on the
        axis}, from one (owner, type) pair a row."""
        type_index, distinct = rank_ids(types)
        out = {}
        for axis, codes in self.codes.items():
            position = {c: i for i, c in enumerate(codes)}
            bits = np.zeros(len(distinct), dtype=np.uint64)
            for i, type_id in enumerate(distinct.tolist()):
                type_axis, code = self.type_axis.get(type_id, (None, None))
                # past 64 codes stats refuses the axis (codes: at most 64 label codes)
                if type_axis == axis and position[code] < 64:
                    bits[i] = np.uint64(1) << np.uint64(position[code])
            row_bits = bits[type_index]
            some = np.flatnonzero(row_bits)
            masks = np.zeros(n_owners, dtype=np.uint64)
            np.bitwise_or.at(masks, owner[some], row_bits[some])
            out[axis] = masks
        return out

    def sets(self, masks: np.ndarray, axis: str) -> np.ndarray:
        """Object array of frozensets: one frozenset per distinct mask, shared by reference."""
        inverse, distinct = pd.factorize(masks)
        codes = self.codes[axis]
        by_mask = np.empty(len(distinct), dtype=object)
        by_mask[:] = [
            frozenset(c for i, c in enumerate(codes) if int(m) >> i & 1) for m in distinct
        ]
        return by_mask[inverse]


def _collapse(ids: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Rows of a LEFT JOIN on the types (one per owner and type: the study gold) -> the owner
    index of each row, and each column's value once per owner (in ascending id order)."""
    owner, distinct = rank_ids(ids)
    out = []
    for column in columns:
        values = np.zeros(len(distinct), dtype=np.int64)
        values[owner] = column
        out.append(values)
    return owner, out


def _links(ids: np.ndarray, owner: np.ndarray, type_id: np.ndarray) -> list[np.ndarray]:
    """(index into `ids`, type) of the type links (owner, type) whose owner is in `ids`."""
    index = value_per(ids, np.arange(len(ids)), owner, missing=-1)
    return _where(index >= 0, index, type_id)


def _names(model, ids: np.ndarray, field: str) -> tuple[np.ndarray, list, list[int]]:
    """(index of each id into the names, the names, their ids): the `field` of each
    distinct id."""
    index, distinct = rank_ids(ids)
    found = dict(model.objects.filter(pk__in=distinct.tolist()).values_list("pk", field))
    return index, [found.get(i) for i in distinct.tolist()], distinct.tolist()


def _group_names(group_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """_names of groups, group 0 named NO_GROUP; one entry per name."""
    index, names, _ = _names(Group, group_ids, "name")
    names = [NO_GROUP if name is None else name for name in names]
    by_name, distinct = pd.factorize(np.array(names, dtype=object))
    return by_name[index].astype(np.int64), list(distinct)


def _record_groups(
    conversation: np.ndarray,
    user: np.ndarray,
    assignments: list[np.ndarray],
    members: list[np.ndarray],
) -> np.ndarray:
    """The group id of each record (0: none): the group in which the annotator labels the
    conversation (the lowest id if several); on a conversation of one group, that group."""
    a_conv, a_group = assignments
    n_groups = count_per(a_conv, conversation)
    # a conversation's only group (a shared one's too, replaced below)
    group = np.where(n_groups == 1, value_per(a_conv, a_group, conversation), 0)
    shared = np.flatnonzero(n_groups >= 2)
    if not len(shared):
        return group
    # the seats on shared conversations: each assignment times each member of its group
    on_shared = count_per(a_conv, a_conv) >= 2
    s_conv, s_group = a_conv[on_shared], a_group[on_shared]
    m_group, m_user, _ = members
    by_group = np.argsort(m_group, kind="stable")
    m_group, m_user = m_group[by_group], m_user[by_group]
    lo = np.searchsorted(m_group, s_group, "left")
    n_members = np.searchsorted(m_group, s_group, "right") - lo
    starts = np.cumsum(n_members) - n_members
    member = np.repeat(lo - starts, n_members) + np.arange(int(n_members.sum()))
    seat_conv, seat_group = np.repeat(s_conv, n_members), np.repeat(s_group, n_members)
    seat_user = m_user[member]
    # one seat per (conversation, user): the lowest group id
    order = np.lexsort((seat_group, seat_user, seat_conv))
    base = int(max(user.max(initial=0), seat_user.max(initial=0))) + 1
    key = seat_conv[order] * base + seat_user[order]
    first = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, dtype=bool)
    key, seat_group = key[first], seat_group[order][first]
    wanted = conversation[shared] * base + user[shared]
    at = np.minimum(np.searchsorted(key, wanted), max(len(key) - 1, 0))
    if len(key):
        group[shared] = np.where(key[at] == wanted, seat_group[at], 0)
    return group


def _study_gold(
    card: np.ndarray, n_groups: np.ndarray, mask: np.ndarray, lead: Reference
) -> Reference:
    """The study-level gold (models.study_gold_of) of every card, vectorised: the lead's
    decision; else the groups' common set once every group of the card decided."""
    # per card: how many groups decided it, the lowest and the highest of their masks
    card_index, cards = rank_ids(card)
    n_decided = np.bincount(card_index, minlength=len(cards))
    low = np.full(len(cards), np.iinfo(np.uint64).max, dtype=np.uint64)
    high = np.zeros(len(cards), dtype=np.uint64)
    np.minimum.at(low, card_index, mask)
    np.maximum.at(high, card_index, mask)
    n = np.zeros(len(cards), dtype=np.int64)
    n[card_index] = n_groups  # the same on every row of a card: its conversation's
    agreed = (n > 0) & (n_decided >= n) & (low == high)
    gold_card, gold_mask = cards[agreed], low[agreed]
    not_led = ~np.isin(gold_card, np.asarray(lead.card))
    return Reference(
        card=np.concatenate([gold_card[not_led], lead.card]),
        mask=np.concatenate([gold_mask[not_led], lead.mask]),
    )


def _where(keep: np.ndarray, *columns: np.ndarray) -> list[np.ndarray]:
    """The rows `keep` selects of each column (the columns themselves when all)."""
    if keep.all():
        return list(columns)
    return [column[keep] for column in columns]


@dataclass
class _Loaded:
    """The study's labels of a round as arrays, per axis."""

    labels: _Labels
    stamp: dict
    card: np.ndarray  # per record: turn id
    conversation: np.ndarray  # per record: the card's conversation id
    annotator: np.ndarray  # per record: index into `annotators`
    annotators: list[str]
    annotator_ids: list[int]  # parallel to `annotators`: the users' ids, which key pairs
    group: np.ndarray  # per record: index into `groups`
    groups: list[str]
    judge: np.ndarray  # per record: bool
    masks: dict[str, np.ndarray]  # per axis, per record
    gold: dict[str, Reference]  # per axis
    between: dict[str, Encoded] | None  # per axis: the groups' consensus on shared cards
    # each group's consensus: card, group id, per axis the masks (the judges' section)
    consensus: tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None = None

    def encoded(self, voting_only: bool) -> dict[str, Encoded]:
        rows = ~self.judge if voting_only else slice(None)
        return encode_axes(
            self.labels.codes,
            self.card[rows],
            self.annotator[rows],
            self.annotators,
            self.group[rows],
            self.groups,
            {axis: masks[rows] for axis, masks in self.masks.items()},
            ids=self.annotator_ids,
        )


def _load(
    study: Study, round: int, codes: dict[str, list[str]], move: int | None = None
) -> _Loaded:
    rows = read_study(study, round, move)
    # the records: the current annotations of the round (or those of the old version's
    # view), one row each
    a_id, card, user, conversation, _ = _where(rows.annotations[4] >= RECORD, *rows.annotations)
    k_id, k_card, k_group, k_conv, _ = _where(rows.consensus[4] >= RECORD, *rows.consensus)
    owner, a_type = _links(a_id, *rows.annotation_types)
    k_owner, k_type = _links(k_id, *rows.consensus_types)
    g_id, g_turn, g_type = rows.gold
    _, used = rank_ids(np.concatenate([a_type, k_type, g_type]))
    labels = _Labels(codes, [t for t in used.tolist() if t > 0])

    masks = labels.masks(owner, len(card), a_type)
    group_id = _record_groups(conversation, user, rows.assignments, rows.members)
    annotator, annotators, annotator_ids = _names(
        get_user_model(), user, get_user_model().USERNAME_FIELD
    )
    group, groups = _group_names(group_id)
    m_group, m_user, m_judge = rows.members
    judges = m_user[m_judge == 1]
    judge = np.isin(user, judges) if len(judges) else np.zeros(len(user), dtype=bool)
    # sorted by (card, annotator) once, so no encoding sorts again
    name_rank = np.argsort(np.argsort(np.array(annotators, dtype=object), kind="stable"))
    key = card * max(len(annotators), 1) + name_rank[annotator] if len(card) else card
    if len(key) > 1 and not (key[1:] >= key[:-1]).all():
        order = np.argsort(key, kind="stable")
        card, annotator, group, judge = card[order], annotator[order], group[order], judge[order]
        conversation = conversation[order]
        masks = {axis: m[order] for axis, m in masks.items()}

    k_masks = labels.masks(k_owner, len(k_card), k_type)
    g_owner, (g_card,) = _collapse(g_id, g_turn)
    g_masks = labels.masks(g_owner, len(g_card), g_type)
    n_groups = count_per(rows.assignments[0], k_conv)
    gold = {
        axis: _study_gold(k_card, n_groups, k_masks[axis], Reference(g_card, g_masks[axis]))
        for axis in labels.codes
    }
    # the groups' consensus on the cards several groups decided, a group as an annotator
    shared = count_per(k_card, k_card) >= 2
    between = None
    if shared.any():
        name, names, group_ids = _names(Group, k_group[shared], "name")
        between = encode_axes(
            labels.codes,
            k_card[shared],
            name,
            names,
            np.zeros(int(shared.sum()), dtype=np.int64),
            ["groups"],
            {axis: m[shared] for axis, m in k_masks.items()},
            ids=group_ids,  # pairs of groups keyed by ids: a group's name may hold "|"
        )
    return _Loaded(
        labels=labels,
        stamp=rows.stamp(),
        card=card,
        conversation=conversation,
        annotator=annotator,
        annotators=annotators,
        annotator_ids=annotator_ids,
        group=group,
        groups=groups,
        judge=judge,
        masks=masks,
        gold=gold,
        between=between,
        consensus=(k_card, k_group, k_masks),
    )


def load_records(
    study: Study, round: int = 1, version: TaxonomyVersion | None = None
) -> dict[str, tuple[pd.DataFrame, list, dict]]:
    """{axis code: (records, codes, consensus)} for `stats.agreement_reports`: the current
    labels of `round` (or those of an old `version`), one record per (card, annotator),
    judges' included, with the card's `conversation` (for versus.versus_reference's
    intervals), and the study-level gold {card: frozenset}."""
    version, move = _view(study, version)
    data = _load(study, round, axis_codes(study, version), move)
    annotators = np.array(data.annotators, dtype=object)
    groups = np.array(data.groups, dtype=object)
    out = {}
    for axis, codes in data.labels.codes.items():
        records = pd.DataFrame(
            {
                "card": data.card,
                "annotator": annotators[data.annotator],
                "group": groups[data.group],
                "labels": data.labels.sets(data.masks[axis], axis),
                "conversation": data.conversation,
            }
        )
        gold = data.gold[axis]
        sets = data.labels.sets(gold.mask, axis)
        out[axis] = (records, list(codes), dict(zip(gold.card.tolist(), sets, strict=True)))
    return out


def data_stamp(study: Study) -> dict:
    """A fingerprint of what the report depends on: the study's count of annotation and
    consensus writes (StudyFigures.label_writes, kept by the database: every label given,
    revised, reopened or deleted moves it). One row read, whatever the study's size. The job
    reads the same figure in the snapshot of the rows it reads (rows.StudyRows.stamp)."""
    return {"label_writes": label_writes(study)}


def compute_study_report(
    study: Study,
    round: int = 1,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
    version: TaxonomyVersion | None = None,
    dev_share: float = DEV_SHARE,
    by: str | None = None,
) -> dict:
    """The study's agreement report of `round`, every axis, with the report page's extras,
    on the study's taxonomy version or an old `version` it moved away from, and, when the
    study has judge runs, their scores (`judges`, judge_data.py; lead-only: access.py
    `report_result`; `dev_share` splits the conversations for a scored judge's threshold).
    `progress(done, total, message)` is told before each step. A study with episodes gets
    their section (`episodes`, episode_section; with `by`, every figure per stratum of that
    conversation metadata field)."""
    version, move = _view(study, version)
    codes = axis_codes(study, version)
    steps = _Steps(progress, total=1 + 2 * len(codes))
    steps("loading the labels from the database")
    data = _load(study, round, codes, move)
    steps.total = 1 + 2 * len(data.labels.codes)
    everyone = data.encoded(voting_only=False)
    voting = data.encoded(voting_only=True) if data.judge.any() else everyone
    axes = {}
    kinds, phases = {}, {}
    for name, kind, phase in Group.objects.filter(study=study).values_list("name", "kind", "phase"):
        kinds[name], phases[name] = kind, phase or study.phase  # the group's effective phase
    for axis in data.labels.codes:
        gold = data.gold[axis]
        steps(f"{axis}: agreement statistics")
        report = report_from_encoded(voting[axis], gold, n_boot=n_boot, seed=seed)
        steps(f"{axis}: tables for the report page")
        between = data.between[axis] if data.between is not None else None
        axes[axis] = {
            "report": report,
            "extras": extras_from_encoded(voting[axis], gold),
            "versus_consensus": versus_encoded(
                everyone[axis],
                gold,
                value_per(data.card, data.conversation, np.asarray(everyone[axis].cards)),
                n_boot=n_boot,
                seed=seed,
            ),
            "between_groups": _between_groups(between, n_boot, seed),
        }
        axes[axis]["teams"] = team_means(report.get("groups", {}), kinds)
        axes[axis]["phases"] = team_means(report.get("groups", {}), phases)
        check = split_check_measures(data, axis, report, n_boot, seed)
        if check is not None:
            axes[axis]["split_check"] = check
    out = {
        "study": study.slug,
        "round": round,
        "taxonomy_version": str(version),
        "taxonomy_version_id": version.pk,
        "taxonomy_version_is_current": move is None,
        "computed_at": timezone.now().isoformat(),
        "n_boot": n_boot,
        "seed": seed,
        "data_stamp": data.stamp,
        "axes": axes,
    }
    judges = (
        judges_section(study, data, n_boot=n_boot, seed=seed, dev_share=dev_share)
        if round == 1
        else None
    )
    if judges is not None:
        out["judges"] = judges
    episodes = episode_section(study, by=by)
    if episodes is not None:
        out["episodes"] = episodes
    if data.judge.any():  # who of versus_consensus is a judge (lead-only: access.report_result)
        out["judge_annotators"] = sorted(
            {data.annotators[i] for i in np.unique(data.annotator[data.judge]).tolist()}
        )
    return out


def episode_section(study: Study, by: str | None = None) -> dict | None:
    """The episode measures (episodes/report.py: per run, coverage, agreement, co-occurrence
    over gold; with `by` the same per stratum) and, with two runs or more, each pair of runs
    compared (compare_runs, IoU >= 0.5; without the matched pairs' ids). None without
    episodes."""
    if not Episode.objects.filter(conversation__study=study).exists():
        return None
    section = episode_measures(study, by=by)
    runs = sorted(section["overall"]["runs"])
    section["comparisons"] = [
        {k: v for k, v in compare(study, a, b).items() if k != "pairs"}
        for i, a in enumerate(runs)
        for b in runs[i + 1 :]
    ]
    return section


def _between_groups(between: Encoded | None, n_boot: int, seed: int) -> dict:
    """The agreement between the groups' consensus labels on the cards several groups
    decided: per pair of groups (keyed by their ids, naming both, as the report's pairs:
    Cohen's kappa on sets,
    per label, percent agreement, ...), each group in an annotator's place."""
    if between is None:
        return {"n_cards": 0, "pairs": {}}
    report = report_from_encoded(between, n_boot=n_boot, seed=seed)
    return {"n_cards": report["n_pairable_cards"], "pairs": report["pairs"]}


class _Steps:
    """Counts the steps of a computation and tells `progress` before each one."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.done, self.total = progress, 0, total

    def __call__(self, message: str) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total, message)
        self.done += 1
