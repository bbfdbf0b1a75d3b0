"""What several steps of the methods section read: the study's finished jobs, the moment the
splitting began (which tells the first coding filter from the second), and its groups with
their people, phase and cards."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from django.db.models import BooleanField, Count, ExpressionWrapper, Min, Q, Sum, Value
from django.db.models.functions import Least

from ..access import judges_visible_to
from ..models import (
    Conversation,
    Group,
    GroupFigures,
    Job,
    JobKind,
    JobStatus,
    Phase,
    TagSet,
)


@dataclass(frozen=True)
class Census:
    """The study's conversations counted once (issue 25: the methods text counted them in six
    scans, 600 ms at 1,000,000 conversations), by what the steps tell apart: their import,
    format and file; whether they are originals (not a split's parts); why they are set aside;
    their size (1: a single turn, 2: more). `unfinished`: the imports not done yet, whose
    conversations `visible()` leaves out."""

    rows: tuple[tuple, ...]  # (job, format, file, original, set_aside, size, n, turns)
    unfinished: frozenset[int]

    def count(self, *, visible: bool = False, set_aside=None, size=None) -> int:
        """The conversations (only the visible ones if `visible`) set aside for one of
        `set_aside` (a collection; None: any), of `size` turns (1, or 2: more; None: any)."""
        return sum(
            n
            for job, _, _, _, aside, turns, n, _ in self.rows
            if not (visible and job in self.unfinished)
            and (set_aside is None or aside in set_aside)
            and (size is None or turns == size)
        )

    def originals_by_source(self) -> list[tuple]:
        """(job, format, file, conversations, turns) of the originals, every import's."""
        out: dict = {}
        for job, fmt, file, original, _, _, n, turns in self.rows:
            if original:
                got = out.setdefault((job, fmt, file), [0, 0])
                got[0] += n
                got[1] += turns
        return [(*key, n, turns) for key, (n, turns) in out.items()]


@dataclass
class GroupInfo:
    pk: int
    name: str
    kind: str
    # the phase the group labelled in: the open sort if it is open-sorting or took free tags
    # (the freeze moves it to the closed sort; its labels came from the open sort)
    phase: str
    phase_now: str
    annotators: list[str]
    annotator_ids: list[int]
    moderator: str  # "" : none (the study's leads moderate)
    judges: list[str]
    conversations: int
    cards: int


class Context:
    """The study, and who reads the section (None: the command line, which sees it all)."""

    def __init__(self, study, user=None) -> None:
        self.study, self.user = study, user

    @cached_property
    def census(self) -> Census:
        """The study's conversations counted by what the steps tell apart (two queries: the
        counts, and the imports not done yet)."""
        rows = (
            Conversation.objects.filter(study=self.study)
            .annotate(
                original=ExpressionWrapper(Q(split_from__isnull=True), BooleanField()),
                size=Least("n_turns", Value(2)),
            )
            .values_list(
                "import_job_id", "source_format", "source_file", "original", "set_aside", "size"
            )
            .annotate(n=Count("pk"), turns=Sum("n_turns"))
            .order_by()
        )
        unfinished = Job.objects.filter(kind=JobKind.IMPORT).exclude(status=JobStatus.DONE)
        return Census(
            tuple((*r[:6], r[6], r[7] or 0) for r in rows),
            frozenset(unfinished.values_list("pk", flat=True)),
        )

    @cached_property
    def reads_judges(self) -> bool:
        """Whether the reader sees machine judges (the leads; the command line)."""
        return self.user is None or judges_visible_to(self.user, self.study)

    def jobs(self, kind: str) -> list[Job]:
        """The study's finished jobs of `kind`, oldest first."""
        return list(
            Job.objects.filter(study=self.study, kind=kind, status=JobStatus.DONE).order_by(
                "created_at", "id"
            )
        )

    @cached_property
    def split_moment(self):
        """When the splitting began: the first finished splitting job's start, or the first
        part's creation (a split by hand); None when nothing was split or asked."""
        moments = []
        first_job = (
            Job.objects.filter(study=self.study, kind=JobKind.SPLIT, status=JobStatus.DONE)
            .order_by("created_at", "id")
            .values_list("created_at", flat=True)
            .first()
        )
        if first_job is not None:
            moments.append(first_job)
        first_part = Conversation.objects.filter(
            study=self.study, split_from__isnull=False
        ).aggregate(first=Min("created_at"))["first"]
        if first_part is not None:
            moments.append(first_part)
        return min(moments) if moments else None

    @cached_property
    def agreement_job(self) -> Job | None:
        """The latest finished agreement job: the report page's."""
        return (
            Job.objects.filter(study=self.study, kind=JobKind.AGREEMENT, status=JobStatus.DONE)
            .order_by("-finished_at", "-id")
            .first()
        )

    @cached_property
    def groups(self) -> list[GroupInfo]:
        groups = list(
            Group.objects.filter(study=self.study)
            .select_related("moderator", "study")
            .prefetch_related("annotators", "judges")
            .order_by("name")
        )
        ids = [g.pk for g in groups]
        # the groups' kept figures (models/figures.py): no count over the study's cards
        kept = GroupFigures.objects.filter(group_id__in=ids)
        conversations, cards = {}, {}
        for pk, n_conversations, n_cards in kept.values_list("group_id", "conversations", "cards"):
            conversations[pk], cards[pk] = n_conversations, n_cards
        tagged = set(
            TagSet.objects.filter(group_id__in=ids).values_list("group_id", flat=True).distinct()
        )
        # the judges are the leads' to read (access.judges_visible_to); the command line's too
        judges_shown = self.reads_judges
        out = []
        for g in groups:
            annotators = sorted(g.annotators.all(), key=lambda u: u.username)
            phase_now = g.effective_phase
            open_sort = phase_now == Phase.OPEN_SORT or g.pk in tagged
            out.append(
                GroupInfo(
                    pk=g.pk,
                    name=g.name,
                    kind=g.kind,
                    phase=Phase.OPEN_SORT if open_sort else phase_now,
                    phase_now=phase_now,
                    annotators=[u.username for u in annotators],
                    annotator_ids=[u.pk for u in annotators],
                    moderator=g.moderator.username if g.moderator else "",
                    judges=sorted(u.username for u in g.judges.all()) if judges_shown else [],
                    conversations=conversations.get(g.pk, 0),
                    cards=cards.get(g.pk, 0),
                )
            )
        return out

    @cached_property
    def group_by_name(self) -> dict[str, GroupInfo]:
        return {g.name: g for g in self.groups}
