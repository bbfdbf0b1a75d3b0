"""People's judgements of episodes and their coverage ratings, read by `import_annotations`
from the same JSONL as card labels (dispatched on each record's keys, `record_kind`):

    {"episode": 17, "annotator": "ann", "group": "E1", "round": 1, "valid": false,
     "invalid_reason": "observational_blind_spot"}
    {"conversation": "s1", "first_turn": 2, "last_turn": 4, "run": "gpt", "annotator": "ann",
     "group": "E1", "valid": true, "labels": {"symptom": ["scope_overreach"]}}
    {"conversation": "s1", "annotator": "ann", "group": "E1", "coverage": 2}

An episode is named by its id (with `run`, the run it must belong to) or by its conversation,
turn range and run (`"run": null`: a person's episode). The round rules are the cards'
(RoundRules): round 1 is each annotator's own judgement, open until every annotator of the
group has judged the episode; a later round opens only when the round before ended in
disagreement, up to the study's discussion rounds. Two judgements agree when they are the same
verdict, reason and labels. A changed round-1 judgement while the round is open is a revision
(a new row, the old one no longer current); the same judgement again changes nothing.

Seats and groups follow the label import (importers/label_seats.py): `--create-members`
creates annotators and groups and assigns each conversation to its group. A group the import
creates annotates episodes (Group.unit); an existing group must annotate episodes already.
Bad records are reported as `file:line: field: reason` and skipped; the import is one
transaction over two passes (seat everyone, then write)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from .. import conversation_keys
from ..episodes import rounds
from ..episodes.labels import axes_of, check_labels
from ..episodes.reasons import check_reason
from ..models import (
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    Group,
    Kind,
    RoundClosed,
    Source,
    Study,
    Unit,
)
from .label_seats import LabelRecordError, Seating, record_name

EPISODE_KEYS = ("episode", "valid", "first_turn", "last_turn")


def record_kind(record: dict) -> str | None:
    """ "coverage" for a coverage rating, "episode" for an episode judgement, None for a
    card's labels (the label import's own record)."""
    if "coverage" in record:
        return "coverage"
    if any(key in record for key in EPISODE_KEYS):
        return "episode"
    return None


@dataclass
class _Pending:
    line: int
    episode_id: int
    group_id: int
    annotator_id: int
    round: int
    valid: bool
    reason: str
    labels: dict


def _positive_int(record: dict, key: str, default=None) -> int:
    value = record.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LabelRecordError(f"{key}: must be a positive integer, got {value!r}")
    return value


class EpisodeRecords:
    """The episode and coverage records of one file, imported into `report` (the label
    import's LabelImportReport: imported, rejected, created users and groups)."""

    def __init__(self, study: Study, path: Path, report, create_members, judge, kind):
        self.study, self.path, self.report = study, path, report
        self.judge = judge
        self.seating = Seating(study, create_members, judge, report, kind)
        self.axes = axes_of(study.taxonomy_version)
        self.episodes: dict[tuple, Episode | LabelRecordError] = {}
        self.conversations = Conversation.objects.filter(study=study).visible()
        User = get_user_model()
        self.username_field = User._meta.get_field(User.USERNAME_FIELD)
        self.group_name_field = Group._meta.get_field("name")
        self.checked: list[tuple[int, str, object]] = []  # (line, kind, value or error)

    # -- pass 1: check every record, seat its annotator, assign its conversation ----------

    def check_all(self, lines) -> None:
        for number, record, _error in lines:
            if record is None or record_kind(record) is None:
                continue
            try:
                value = self.check(record, record_kind(record))
            except LabelRecordError as e:
                value = e
            self.checked.append((number, record_kind(record), value))
        self.seating.write_pending()

    def check(self, record: dict, kind: str):
        for key in ("annotator", "group", "coverage" if kind == "coverage" else "valid"):
            if key not in record:
                raise LabelRecordError(f"{key}: missing field")
        if kind == "coverage":
            conversation, rating = self.coverage(record)
            group, user = self.seat(record, conversation.pk)
            return ("coverage", conversation.pk, group.pk, user.pk, rating)
        episode = self.episode(record)
        valid = record["valid"]
        if not isinstance(valid, bool):
            raise LabelRecordError(f"valid: must be true or false, got {valid!r}")
        try:
            reason = check_reason(valid, record.get("invalid_reason"))
            labels = check_labels(record.get("labels"), self.axes)
        except ValueError as e:
            raise LabelRecordError(str(e)) from None
        if labels and not valid:
            raise LabelRecordError("labels: given for an episode judged invalid")
        round = _positive_int(record, "round", default=1)
        if self.judge and round != 1:
            raise LabelRecordError("round: a judge's judgements are round 1 only")
        group, user = self.seat(record, episode.conversation_id)
        return _Pending(0, episode.pk, group.pk, user.pk, round, valid, reason, labels)

    def coverage(self, record: dict):
        rating = record["coverage"]
        if isinstance(rating, bool) or rating not in (0, 1, 2):
            raise LabelRecordError(f"coverage: must be 0, 1 or 2, got {rating!r}")
        return self.conversation(record), rating

    def conversation(self, record: dict):
        name = record.get("conversation")
        if isinstance(name, int) and not isinstance(name, bool):
            name = str(name)
        if not isinstance(name, str) or not name:
            raise LabelRecordError(f"conversation: must be a conversation id, got {name!r}")
        found = conversation_keys.find(self.conversations, [name])
        try:
            named = conversation_keys.one(
                name,
                None,
                found,
                {},
                unknown=f"unknown conversation id {{!r}} in study {self.study}",
            )
        except ValueError as e:
            raise LabelRecordError(str(e)) from None
        return named

    def episode(self, record: dict) -> Episode:
        run = record.get("run")
        if run is not None and not isinstance(run, str):
            raise LabelRecordError(f"run: must be a run's name or null, got {run!r}")
        if "episode" in record:
            pk = record["episode"]
            if isinstance(pk, bool) or not isinstance(pk, int):
                raise LabelRecordError(f"episode: must be an episode id, got {pk!r}")
            key = ("id", pk, run)
        else:
            for field in ("conversation", "first_turn", "last_turn", "run"):
                if field not in record:
                    raise LabelRecordError(
                        f"{field}: missing field (name the episode by its id, or by "
                        "conversation, first_turn, last_turn and run)"
                    )
            first = _positive_int(record, "first_turn")
            last = _positive_int(record, "last_turn")
            key = ("range", self.conversation(record).pk, first, last, run)
        if key not in self.episodes:
            self.episodes[key] = self._find(key)
        found = self.episodes[key]
        if isinstance(found, LabelRecordError):
            raise LabelRecordError(str(found))
        return found

    def _find(self, key: tuple) -> Episode | LabelRecordError:
        episodes = Episode.objects.filter(conversation__study=self.study).select_related("run")
        if key[0] == "id":
            episode = episodes.filter(pk=key[1]).first()
            if episode is None:
                return LabelRecordError(f"episode: no episode {key[1]} in study {self.study}")
            if key[2] is not None and (episode.run is None or episode.run.name != key[2]):
                of = f"run {episode.run.name!r}" if episode.run else "a person"
                return LabelRecordError(f"run: episode {key[1]} is {of}'s, not run {key[2]!r}")
            return episode
        _, conversation_id, first, last, run = key
        found = list(
            episodes.filter(
                conversation_id=conversation_id,
                first_turn=first,
                last_turn=last,
                **({"run__isnull": True} if run is None else {"run__name": run}),
            )[:2]
        )
        whose = f"run {run!r}" if run is not None else "a person"
        if not found:
            return LabelRecordError(
                f"episode: {whose} has no episode of turns {first}-{last} in that conversation"
            )
        if len(found) > 1:
            return LabelRecordError(
                f"episode: {whose} has several episodes of turns {first}-{last} there; "
                "name it by its id"
            )
        return found[0]

    def seat(self, record: dict, conversation_id: int):
        group_name = record_name(record.get("group"), "group", self.group_name_field)
        username = record_name(record.get("annotator"), "annotator", self.username_field)
        group = self.seating.group(group_name)
        if group.unit != Unit.EPISODE:
            if group.pk not in self.seating.created.groups:
                raise LabelRecordError(
                    f"group: {group.name!r} annotates turns, not episodes (create_group "
                    "--unit episode makes a group for episodes)"
                )
            Group.objects.filter(pk=group.pk).update(unit=Unit.EPISODE)
            group.unit = Unit.EPISODE
        user = self.seating.seat(group_name, username)
        if (conversation_id, group_name) in self.seating.assigned:
            self.seating.assign(conversation_id, group_name)  # decided: its error if any
            return group, user
        self.seating.new_batch(
            (c, g) for c, g in Conversation.objects.filter(pk=conversation_id).values_list(
                "pk", "assignments__group__name"
            ) if g
        )  # fmt: skip
        self.seating.assign(conversation_id, group_name)
        self.seating.write_pending()
        return group, user

    # -- pass 2: write -----------------------------------------------------------------

    def write(self) -> None:
        now = timezone.now()
        version = self.study.taxonomy_version
        pending = []
        for number, kind, value in self.checked:
            if isinstance(value, LabelRecordError):
                self.report.rejected.append(f"{self.path}:{number}: {value}")
            elif kind == "coverage":
                self.write_coverage(number, value, now)
            else:
                value.line = number
                pending.append(value)
        self.write_judgements(pending, version, now)

    def write_coverage(self, number: int, value: tuple, now) -> None:
        _, conversation_id, group_id, annotator_id, rating = value
        current = CoverageRating.objects.filter(
            conversation_id=conversation_id, group_id=group_id, annotator_id=annotator_id,
            is_current=True,
        )  # fmt: skip
        if current.filter(rating=rating).exists():
            self.report.imported += 1
            return
        current.update(is_current=False)
        CoverageRating.objects.create(
            conversation_id=conversation_id, group_id=group_id, annotator_id=annotator_id,
            rating=rating, source=Source.IMPORT, created_at=now,
        )  # fmt: skip
        self.report.imported += 1

    def write_judgements(self, pending: list[_Pending], version, now) -> None:
        """Each judgement under the rounds' one rule (episodes/rounds.decide), in the file's
        order, as the episode card's submit applies it."""
        if not pending:
            return
        current = rounds.judged_of({p.episode_id for p in pending})
        voters = rounds.voters_of({p.group_id for p in pending})
        decided = rounds.decided_of({p.episode_id for p in pending})
        discussion_rounds = self.study.discussion_rounds
        retired: list[int] = []
        new: list[EpisodeJudgement] = []
        for p in pending:
            key = rounds.agreement_key(p.valid, p.reason, p.labels)
            try:
                action, replaced = rounds.decide(
                    current[(p.episode_id, p.group_id)], voters[p.group_id], discussion_rounds,
                    p.annotator_id, p.round, key, (p.episode_id, p.group_id) in decided,
                )  # fmt: skip
            except RoundClosed as e:
                self.report.rejected.append(f"{self.path}:{p.line}: round: {e}")
                continue
            self.report.imported += 1
            if action == rounds.SAME:
                continue  # the same judgement again
            if replaced is not None:
                retired.append(replaced)
            new.append(
                EpisodeJudgement(
                    episode_id=p.episode_id, annotator_id=p.annotator_id, group_id=p.group_id,
                    round=p.round, valid=p.valid, invalid_reason=p.reason, labels=p.labels,
                    taxonomy_version=version, source=Source.IMPORT, created_at=now,
                )
            )  # fmt: skip
        # the rows a revision replaces, and rows of this file revised later in it
        EpisodeJudgement.objects.filter(pk__in=retired).update(is_current=False)
        latest = {}
        for j in new:
            latest[(j.episode_id, j.annotator_id, j.round)] = j
        for j in new:
            j.is_current = latest[(j.episode_id, j.annotator_id, j.round)] is j
        EpisodeJudgement.objects.bulk_create(new)


def import_episode_records(
    study: Study,
    path: Path,
    report,
    lines,
    *,
    create_members: bool = False,
    judge: bool = False,
    kind: str = Kind.STUDENT,
) -> int:
    """Import the episode and coverage records of `lines` (read_label_lines of `path`, read
    twice: call with a function returning a fresh reader) into `report`; returns how many
    records were imported. All of it in one transaction; when none is imported, the
    accounts, groups, seats and assignments it created are removed."""
    before = report.imported
    records = EpisodeRecords(study, path, report, create_members, judge, kind)
    with transaction.atomic():
        records.check_all(lines())
        records.write()
    imported = report.imported - before
    if imported == 0:
        records.seating.created.remove(study)
    return imported
