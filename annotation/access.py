"""Access helpers shared by pages, partials and the API. Every view starts with one of
these; a template never decides who may see what."""

from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.lookups import Exact
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from .models import (
    Annotation,
    CardState,
    CardStatus,
    Comment,
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    EpisodeTime,
    Group,
    Job,
    JobKind,
    Kind,
    Role,
    Study,
    Turn,
    Unit,
)

# Why a member may not open a page (a 403 that says so: templates/403.html). Someone who is
# not a member gets the 404 of a study that does not exist instead: nothing is revealed.
LEADS_ONLY = "Leads only: this page is for the study's leads."
LEADS_AND_MODERATORS_ONLY = (
    "Leads and moderators only: this page is for the study's leads and moderators."
)
LEADS_AND_EXPERTS_ONLY = (
    "Leads and experts only: the study's leads and expert members decide proposals."
)
TURNS_NOT_EPISODES = (
    "Your group judges this session by episodes, not turn by turn: open it from your sessions page."
)
EPISODES_NOT_TURNS = (
    "Your group labels this session turn by turn, not by episodes: open its cards from your queue."
)
STILL_IN_ROUND_1 = (
    "This card is still in round 1: its discussion opens once every annotator of your group "
    "has labelled it, so that your labels stay your own judgment."
)


def get_study_for_user(user, slug: str) -> tuple[Study, str]:
    """The study and the user's role in it; 404 for non-members, so a study's existence
    does not leak."""
    study = get_object_or_404(Study.objects.select_related("taxonomy_version"), slug=slug)
    role = study.role_of(user)
    if role is None:
        raise Http404("No such study")
    return study, role


def get_study_for_lead(user, slug: str, *, say_why: bool = False) -> Study:
    """The study for one of its leads; 404 for everyone else, or with `say_why` (the pages)
    a 403 "Leads only" for a member who is not a lead (the API keeps its 404)."""
    study, role = get_study_for_user(user, slug)
    if role != Role.LEAD:
        if say_why:
            raise PermissionDenied(LEADS_ONLY)
        raise Http404("No such study")
    return study


def get_card_for_annotator(user, study: Study, turn_id: int) -> tuple[Turn, Group]:
    """A turn the user annotates: its conversation is assigned to one of the user's groups
    (one at most of the groups sharing it: Group.check_seat) that labels turns. A 403 saying
    why for a turn of a session their group judges by episodes (issue 21: a group's unit),
    a 404 for any other."""
    turn = get_object_or_404(
        Turn.objects.select_related("conversation"),
        pk=turn_id,
        conversation__study=study,
    )
    groups = list(
        Group.objects.filter(
            assignments__conversation_id=turn.conversation_id, annotators=user
        ).order_by("name")
    )
    group = next((g for g in groups if g.unit == Unit.TURN), None)
    if group is None and groups:  # their group judges this session's episodes, not its turns
        raise PermissionDenied(TURNS_NOT_EPISODES)
    if group is None:
        raise Http404("No such card")
    # the study at hand, not a query each time a model asks for it (the phase, the version)
    turn.conversation.study = study
    if group.study_id == study.pk:
        group.study = study
    return turn, group


def get_session_for_annotator(
    user, study: Study, conversation_id: int, group_id: int | None = None
) -> tuple[Conversation, Group]:
    """A session (conversation) the user annotates episode by episode: assigned to one of
    the user's groups (`group_id` picks it; one at most of the groups sharing a conversation:
    Group.check_seat) whose unit is `episode`. A 404 for a session they do not annotate (its
    existence does not leak), a 403 saying why for one their group labels turn by turn."""
    conversation = get_object_or_404(
        Conversation.objects.visible(), pk=conversation_id, study=study
    )
    groups = Group.objects.filter(assignments__conversation=conversation, annotators=user)
    if group_id is not None:
        groups = groups.filter(pk=group_id)
    group = groups.order_by("name").first()
    if group is None:
        raise Http404("No such session")
    if group.unit != Unit.EPISODE:
        raise PermissionDenied(EPISODES_NOT_TURNS)
    conversation.study = group.study = study
    return conversation, group


# --- round-1 blindness: the one place that decides it -------------------------------------
#
# Whoever annotates a card (is one of the annotators of the card's group) never sees another
# annotator's labels or notes on it while the card is still in round 1 (status open, or no
# state row yet), whatever other role they hold: lead, moderator, superuser. A lead or
# moderator who does not annotate the card may see them. Pages, partials, error bodies, the
# API and exports all ask these functions, never a role.


def annotates(user, group: Group | None) -> bool:
    """Whether `user` is one of the annotators of `group` (and so labels its cards blind)."""
    if group is None or not getattr(user, "is_authenticated", False):
        return False
    return group.annotators.filter(pk=user.pk).exists()


def may_see_round1(user, group: Group | None, state: CardState | None) -> bool:
    """The per-card predicate: may `user` see the other annotators' round-1 labels and notes
    on the card whose group is `group` and whose state row is `state` (None: nobody has
    labelled it yet, so it is open)? Access to the study and the group is checked
    elsewhere; this only adds blindness."""
    revealed = state is not None and state.status != CardStatus.OPEN
    return revealed or not annotates(user, group)


# A session of an episode group (the session page): what an annotator sees of the episodes
# there. The extracted episodes (a run's) are what the group judges: their text, never the
# run's own verdict, labels or confidence (a machine's, which would anchor the judgement:
# SESSION_EPISODE_FIELDS is all a page may read of them). The annotator's own episodes,
# judgements and rating. Another annotator's judgements and ratings never (their round 1
# is their own; the discussion shows them once a round is over), and the episodes the
# group's other annotators created only once the annotator has rated the session's
# coverage: until then "what did the extractor miss?" stays their own judgement. Episodes
# created by someone who does not annotate in the group (another group sharing the
# session, a lead) never reach the page.

SESSION_EPISODE_FIELDS = ("pk", "first_turn", "last_turn", "goal", "run_id", "created_by_id")


def rated_coverage(user, group: Group, conversation: Conversation) -> bool:
    """Whether `user` has rated the session's coverage in `group` (a current rating)."""
    return CoverageRating.objects.filter(
        conversation=conversation, group=group, annotator_id=user.pk, is_current=True
    ).exists()


def session_episodes(user, group: Group, conversation: Conversation) -> QuerySet:
    """The episodes of the session `user` may see on its page in `group` (the rule above),
    with SESSION_EPISODE_FIELDS only."""
    if not annotates(user, group):
        return Episode.objects.none()
    episodes = Episode.objects.filter(
        episodes_annotator_sees(user, group, rated_coverage(user, group, conversation)),
        conversation=conversation,
    )
    return episodes.only(*SESSION_EPISODE_FIELDS)


def episodes_annotator_sees(user, group: Group, rated: bool) -> Q:
    """The episodes an annotator of `group` may see of a session, on any page (the session
    page, the episode card, the queue): every extracted one and their own; the episodes the
    group's other annotators recorded only once `rated` (they rated the session's coverage:
    what the extractor missed stays their own judgement); never someone else's outside the
    group."""
    shown = Q(run__isnull=False) | Q(created_by_id=user.pk)
    if rated:
        shown |= Q(run__isnull=True, created_by__in=group.annotators.all())
    return shown


def episode_hidden_from_annotator(user, group: Group, episode: Episode) -> bool:
    """Whether `episode` is hidden from `user`, an annotator of `group`
    (episodes_annotator_sees)."""
    if episode.run_id is not None or episode.created_by_id == user.pk:
        return False
    rated = rated_coverage(user, group, episode.conversation)
    shown = episodes_annotator_sees(user, group, rated)
    return not Episode.objects.filter(shown, pk=episode.pk).exists()


def episodes_hidden_in_queue(user, groups) -> set[tuple[int, int]]:
    """{(episode id, group id)} of the episodes of `groups` (each annotated by `user`) that
    are hidden from `user` (episodes_annotator_sees): the queue never leads there."""
    groups = list(groups)
    rated = set(
        CoverageRating.objects.filter(
            annotator_id=user.pk, group__in=groups, is_current=True
        ).values_list("conversation_id", "group_id")
    )
    hidden = set()
    for group in groups:
        people = Episode.objects.filter(
            run__isnull=True, conversation__assignments__group=group
        ).exclude(created_by_id=user.pk)
        members = set(group.annotators.values_list("pk", flat=True))
        for pk, conversation_id, author in people.values_list(
            "pk", "conversation_id", "created_by_id"
        ):
            if author not in members or (conversation_id, group.pk) not in rated:
                hidden.add((pk, group.pk))
    return hidden


def round1_hidden_from(user, study: Study | None) -> QuerySet:
    """The ids of the cards (turns) of `study` (every study when None) on which `user` may
    not see anyone else's labels or notes: the open cards of the groups `user` annotates.
    A `values("pk")` queryset, for `turn_id__in=` filters (one subquery, no rows loaded).
    Exports, API lists and pages drop other annotators' rows on these cards: through
    round1_hidden_q or round1_hidden_card, never `exclude(turn_id__in=...)` (see there)."""
    if not getattr(user, "is_authenticated", False):
        return Turn.objects.none().values("pk")
    turns = Turn.objects.filter(conversation__assignments__group__annotators=user)
    if study is not None:
        turns = turns.filter(conversation__study=study)
    return turns.exclude(Exists(_revealed(user))).values("pk")


def _revealed(user) -> QuerySet:
    """The states that open a card (an OuterRef "pk", a turn) in a group `user` annotates:
    a shared card has a state per group, and what counts is the state in the group `user`
    annotates (one only of those sharing a conversation: Group.check_seat)."""
    return CardState.objects.filter(turn_id=OuterRef("pk"), group__annotators=user).exclude(
        status=CardStatus.OPEN
    )


def round1_hidden_q(user, study: Study | None, *, turn: str = "turn", who: str = "annotator") -> Q:
    """A Q over rows that carry a card (`turn`) and a person (`who`), e.g. annotations:
    true for the rows `user` may not see (someone else's, on a card hidden from them).
    The rule is asked of each row (round1_hidden_card, a correlated EXISTS): under
    `exclude()` a NOT EXISTS, which PostgreSQL runs as an anti-join (hashed, or by index
    seeks for a page's few rows). Never `NOT IN (subquery)`: PostgreSQL cannot make that a
    join, and once the study's hidden cards outgrow work_mem it reads them again for every
    row (issue 25: the API's list of labels took over 9 minutes at 1,000,000
    conversations)."""
    if not getattr(user, "is_authenticated", False):
        return Q(pk__in=[])
    # the row's person is asked inside the EXISTS: `NOT EXISTS(...) OR who = user` would be
    # asked row by row, where a NOT EXISTS alone becomes a join
    return Q(round1_hidden_card(user, study, OuterRef(turn), not_by=OuterRef(who)))


def round1_hidden_card(user, study: Study | None, turn_id, not_by=None) -> Exists:
    """round1_hidden_from's rule for one card (`turn_id`, an OuterRef): a card of a group
    `user` annotates whose state in that group is still open (or has none). `not_by`: a
    row's person (an OuterRef to a column never null), true then only of a row that is not
    `user`'s own. Under `exclude()` a NOT EXISTS, which PostgreSQL joins."""
    turns = Turn.objects.filter(pk=turn_id, conversation__assignments__group__annotators=user)
    if study is not None:
        turns = turns.filter(conversation__study=study)
    if not_by is not None:  # a row's person (an OuterRef): true only of someone else's
        turns = turns.exclude(Exact(not_by, user.pk))
    return Exists(turns.exclude(Exists(_revealed(user))))


def agreement_locked_reason(user, study: Study) -> str:
    """Why `user` may not see the study's agreement results yet ("" when they may). The
    results count every round-1 label; someone who annotates a card still in round 1 on which
    others have labelled could read those labels off a pair's kappa or confusion, so the
    results stay closed to them until round 1 is over on such cards. One query for someone
    who annotates none of the study, two otherwise."""
    if not Group.objects.filter(study=study, annotators=user).exists():
        # annotating no card of the study, nothing is hidden from them: one indexed query,
        # where the count below can walk the study's labels on a big study (issue 25)
        return ""
    others = (
        Annotation.objects.filter(turn_id__in=round1_hidden_from(user, study), round=1)
        .exclude(annotator=user)
        .values("turn_id")
        .distinct()
    )
    n = others.count()
    if not n:
        return ""
    return (
        f"You annotate {n} card{'s' if n != 1 else ''} still in round 1 on which others have "
        "labelled. The agreement results count those round-1 labels, so they open for you "
        "once round 1 is over on those cards."
    )


TIMES_LOCKED = (
    "You annotate {what} still in round 1 in this study. The kept time tables (a "
    "“Time per card” job) count everyone's times and labels, the others' on those {what} "
    "included, so they open for you once round 1 is over there; the time page computes "
    "your own tables meanwhile."
)


def times_locked_reason(user, study: Study) -> str:
    """Why `user` may not read the study's kept time tables, a `times` job's result ("" when
    they may): it counts everyone's times and round-1 labels, so it is only for someone
    nothing of the study is hidden from. Locked for whoever annotates a card still in round
    1 for them (round1_hidden_from: the cards the live tables filter for them), even one
    nobody else has touched yet; and for whoever annotates an episode group of the study on
    whose conversations someone else has an episode time, whatever its round (a rule wider
    than rounds.round1_hidden_episodes, which replays each episode's judgements and lives
    above this module: at least as safe). One query for someone who annotates none of the
    study (a lead who only leads), three at most otherwise."""
    groups = Group.objects.filter(study=study, annotators=user)
    if not getattr(user, "is_authenticated", False) or not groups.exists():
        return ""
    if round1_hidden_from(user, study).exists():
        return TIMES_LOCKED.format(what="cards")
    others = EpisodeTime.objects.filter(
        episode__conversation__assignments__group__in=groups.filter(unit=Unit.EPISODE),
        active_ms__gt=0,
    ).exclude(annotator=user)
    if others.exists():
        return TIMES_LOCKED.format(what="episodes")
    return ""


# what of an agreement result names a machine judge: its own section, and the judges' names
JUDGE_KEYS = ("judges", "judge_annotators")


# the kinds of job whose result is computed from round-1 labels: an agreement job's per-pair
# kappas and confusion matrices give each annotator's labels on a card
RESULTS_FROM_LABELS = frozenset({JobKind.AGREEMENT})


class JobResults:
    """Which job results `user` may read in `study`: the one rule of every route to a job's
    result (the API's jobs list, job and download; the pages' job page and partial, Jobs
    panel and job lists). A result computed from round-1 labels is withheld from whoever
    the agreement lock applies to (agreement_locked_reason), with that lock's reason; a
    `times` job's (everyone's times) from whoever the times lock applies to
    (times_locked_reason); any other result is shown. Each lock is asked once, when such a
    job first comes up."""

    def __init__(self, user, study: Study) -> None:
        self.user, self.study = user, study
        self._lock: str | None = None
        self._times_lock: str | None = None
        self._lead: bool | None = None

    def withheld(self, job: Job) -> str:
        """Why `job`'s result is withheld from the user; "" when it is not."""
        if job.kind == JobKind.TIMES:
            if self._times_lock is None:
                self._times_lock = times_locked_reason(self.user, self.study)
            return self._times_lock
        if job.kind not in RESULTS_FROM_LABELS:
            return ""
        if self._lock is None:
            self._lock = agreement_locked_reason(self.user, self.study)
        return self._lock

    def shown(self, jobs):
        """`jobs` as a list, each with `shown_result` (its result, or None when withheld)
        and `result_withheld` (why, or ""): what the job templates and the API's serializer
        read, never `job.result`, so that a job nobody passed through here shows no
        result at all. An agreement result is shown as `report_result` gives it."""
        jobs = list(jobs)
        for job in jobs:
            job.result_withheld = self.withheld(job)
            job.shown_result = None if job.result_withheld else self._readable(job)
        return jobs

    def _readable(self, job: Job):
        """The result, an agreement's without its machine judges for a non-lead."""
        if job.kind != JobKind.AGREEMENT:
            return job.result
        if self._lead is None:
            # not withheld, so the agreement lock does not apply: judges_visible_to is the role
            self._lead = self.study.role_of(self.user) == Role.LEAD
        return report_result(self.user, self.study, job.result, visible=self._lead)


def may_decide(user, role: str | None, group: Group) -> bool:
    """Who may decide a card's consensus: the group's moderator or a lead of the study,
    and never one of the card's own annotators (their round-1 labels must stay their own
    judgment, and a decider who voted would settle their own dispute)."""
    moderates = role == Role.LEAD or (
        group.moderator_id is not None and group.moderator_id == user.pk
    )
    return moderates and not annotates(user, group)


def is_expert(study: Study, user, role: str | None) -> bool:
    """Who decides proposals: the study's leads and its expert members (any role)."""
    if role is None:
        return False
    return role == Role.LEAD or study.memberships.filter(user=user, kind=Kind.EXPERT).exists()


def get_study_for_expert(user, slug: str) -> Study:
    """The study for one of its experts (a page); a 403 for another member, 404 otherwise."""
    study, role = get_study_for_user(user, slug)
    if not is_expert(study, user, role):
        raise PermissionDenied(LEADS_AND_EXPERTS_ONLY)
    return study


# -- the discussion pages: which group's discussion of a card, and what the user may do there


@dataclass
class DiscussionCard:
    """A card as one user may see it on the discussion pages, with what they may do."""

    turn: Turn
    group: Group
    state: CardState | None  # None: nobody has labelled it yet
    is_annotator: bool
    is_moderator: bool  # the group's moderator, or a lead
    role: str
    may_decide: bool  # a moderator or lead who does not annotate the card (access.py)

    @property
    def status(self) -> str:
        return self.state.status if self.state else CardStatus.OPEN

    @property
    def query(self) -> str:
        """The query string naming the card's group, for links and forms."""
        return f"?group={self.group.pk}"

    @property
    def round(self) -> int:
        return self.state.round if self.state else 1

    @property
    def can_revise(self) -> bool:
        return self.is_annotator and self.status == CardStatus.DISPUTED

    @property
    def can_decide(self) -> bool:
        return self.may_decide and self.status in (CardStatus.DISPUTED, CardStatus.ESCALATED)

    @property
    def can_comment(self) -> bool:
        return self.status in (CardStatus.DISPUTED, CardStatus.ESCALATED)


def get_card_for_discussion(
    user, study: Study, role: str, turn_id: int, group_id: int | None = None
) -> DiscussionCard:
    """404 unless the user moderates the card's group or leads the study, or annotates in the
    group; and a 403 "still in round 1" for whoever annotates the card while round 1 is under
    way in their group, whatever their other roles and whichever group's discussion they ask
    for (access.may_see_round1): they know the card, and learn nothing else from it.
    `group_id` picks one of the groups sharing the card; someone who labels the card in
    another group sees this one only once round 1 is over in their own."""
    turn = get_object_or_404(
        Turn.objects.select_related("conversation"), pk=turn_id, conversation__study=study
    )
    groups = list(Group.objects.filter(assignments__conversation_id=turn.conversation_id))
    own = next((g for g in groups if g.annotators.filter(pk=user.pk).exists()), None)
    if own is not None and not _own_round_1_over(user, turn, own):
        raise PermissionDenied(STILL_IN_ROUND_1)  # before any group is picked: none is named
    group = _pick_group(user, role, groups, own, group_id)
    if group is None:
        raise Http404("No such card")
    group.study = study
    state = CardState.objects.filter(turn=turn, group=group).first()
    if state is not None:
        state.turn, state.group = turn, group
    is_moderator = role == Role.LEAD or group.moderator_id == user.pk
    is_annotator = group == own
    if not (is_moderator or is_annotator) or not may_see_round1(user, group, state):
        raise Http404("No such card")
    decider = may_decide(user, role, group)
    return DiscussionCard(turn, group, state, is_annotator, is_moderator, role, decider)


def card_comments(card: DiscussionCard):
    """The group's thread on the card (groups sharing a card discuss apart)."""
    return Comment.objects.filter(turn=card.turn, group=card.group).select_related("author")


def group_annotations(card: DiscussionCard):
    """The cross-group blinding rule: the card's labels as the group sees them, everyone's
    but those of people who label it in another group sharing the card (their round 1 is
    theirs to keep blind), and never a judge's, of any group (a machine judge never votes
    and never reaches annotators or moderators; the leads read the judges on the report).
    The discussion page and the API's discussion both read this."""
    groups = Group.objects.filter(assignments__conversation_id=card.turn.conversation_id)
    others = groups.exclude(pk=card.group.pk)
    outsiders = set(others.filter(annotators__isnull=False).values_list("annotators", flat=True))
    judges = set(groups.filter(judges__isnull=False).values_list("judges", flat=True))
    return Annotation.objects.filter(turn=card.turn).exclude(annotator__in=outsiders | judges)


def _pick_group(
    user, role: str, groups: list[Group], own: Group | None, group_id: int | None
) -> Group | None:
    if group_id is not None:
        return next((g for g in groups if g.pk == group_id), None)
    if own is not None:
        return own
    mine = [g for g in groups if role == Role.LEAD or g.moderator_id == user.pk]
    return min(mine, key=lambda g: g.name, default=None)


def _own_round_1_over(user, turn: Turn, own: Group) -> bool:
    """Whether round 1 is over for the card in the group where `user` labels it."""
    return may_see_round1(user, own, CardState.objects.filter(turn=turn, group=own).first())


def get_moderated_groups(user, study: Study, role: str) -> list[Group]:
    """The groups whose queue the user works: all of them for a lead; a 403 for a member who
    moderates no group (the user is a member: get_study_for_user came first)."""
    groups = Group.objects.filter(study=study).order_by("name")
    if role != Role.LEAD:
        groups = groups.filter(moderator=user)
    groups = list(groups)
    if not groups:
        raise PermissionDenied(LEADS_AND_MODERATORS_ONLY)
    return groups


# -- the lead's jobs and the agreement report


def get_job_for_lead(user, slug: str, job_id: int) -> tuple[Study, Job]:
    """A job of the study, on a lead's page: a member who is not a lead is told "Leads only"
    before the job is looked up, so its existence does not show."""
    study = get_study_for_lead(user, slug, say_why=True)
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=job_id, study=study)
    return study, job


def moderates(user, study: Study) -> bool:
    """Whether `user` holds a moderator seat in one of the study's groups now: the seat, not
    the membership's role word, is what makes a moderator (a former moderator whose role was
    left behind must not keep the moderators' pages)."""
    return Group.objects.filter(study=study, moderator_id=user.pk).exists()


def get_study_for_manager(user, slug: str) -> tuple[Study, str, QuerySet]:
    """The members page: the study, the user's role and the groups whose annotators they
    manage (every group for a lead, the ones they moderate for a moderator); a 403 for
    another member, the 404 of a study that does not exist for anyone else."""
    study, role = get_study_for_user(user, slug)
    groups = Group.objects.filter(study=study).order_by("name")
    if role != Role.LEAD:
        groups = groups.filter(moderator_id=user.pk)
        if not groups.exists():
            raise PermissionDenied(LEADS_AND_MODERATORS_ONLY)
    return study, role, groups


def get_study_for_reporter(user, slug: str) -> Study:
    """Leads and moderators see the whole study's agreement; annotators do not (it shows
    every annotator's labels against the others'): they are told it is for leads and
    moderators (403), and non-members get the 404 of a study that does not exist. A
    moderator is whoever moderates a group of the study now (`moderates`)."""
    study, role = get_study_for_user(user, slug)
    if role != Role.LEAD and not moderates(user, study):
        raise PermissionDenied(LEADS_AND_MODERATORS_ONLY)
    locked = agreement_locked_reason(user, study)
    if locked:
        raise PermissionDenied(locked)
    return study


def lead_page(view):
    """A lead's page: login, then the URL's study for one of its leads, else a 403 "Leads
    only" for a member and a 404 for anyone else (pages, partials and POSTs alike). The view
    is called with the study, not the slug."""

    @wraps(view)
    def with_study(request, slug: str, *args, **kwargs):
        study = get_study_for_lead(request.user, slug, say_why=True)
        return view(request, study, *args, **kwargs)

    return login_required(with_study)


def lead_post(view):
    """A lead's POST-only view (405 for other methods, checked before the study)."""
    return lead_page(require_POST(view))


def judges_visible_to(user, study: Study) -> bool:
    """Whether `user` may see the study's machine judges (their runs, scores, labels): its
    leads, unless the agreement lock applies to them (a judge's labels are round-1 labels
    of cards they annotate blind). Never annotators or moderators."""
    if study.role_of(user) != Role.LEAD:
        return False
    return not agreement_locked_reason(user, study)


def get_study_for_judges(user, slug: str) -> Study:
    """The study for a lead who may see its machine judges (judges_visible_to): a 404 for
    non-members, a 403 saying why for the others."""
    study = get_study_for_lead(user, slug, say_why=True)
    locked = agreement_locked_reason(user, study)
    if locked:
        raise PermissionDenied(locked)
    return study


def judge_usernames(study: Study) -> set[str]:
    """The usernames of whoever sits as a judge in a group of `study` (machine judges'
    pseudo-users, imported reference annotators)."""
    return set(
        Group.judges.through.objects.filter(group__study=study).values_list(
            "user__username", flat=True
        )
    )


def without_judges(data, names: set[str]):
    """`data` (a stored result: dicts, lists, values) without what is keyed by, or is, one
    of `names`: a report's judge measures (each annotator against the consensus, the split
    check's accuracies) as a moderator reads it."""
    if not names:
        return data
    if isinstance(data, dict):
        return {k: without_judges(v, names) for k, v in data.items() if k not in names}
    if isinstance(data, list):
        return [without_judges(v, names) for v in data if not (isinstance(v, str) and v in names)]
    return data


def report_result(user, study: Study, result, *, visible: bool | None = None):
    """An agreement result as `user` reads it: whole for whoever may see the machine judges
    (judges_visible_to; `visible` when the caller knows it already), else without them: the
    judges' own section and names (JUDGE_KEYS) and whatever is keyed by, or is, a judge's
    username (each annotator against the consensus, the split check's accuracies), and the
    episode section's extraction-run verdicts and labels (a model's). The one
    rule of the report page, its downloads and every route to a job's result."""
    if not isinstance(result, dict):
        return result
    if visible is None:
        visible = judges_visible_to(user, study)
    if visible:
        return result
    names = judge_usernames(study) | set(result.get("judge_annotators") or ())
    names |= set((result.get("judges") or {}).get("pseudo_users") or ())
    kept = {k: v for k, v in result.items() if k not in JUDGE_KEYS}
    if isinstance(kept.get("episodes"), dict):
        kept["episodes"] = _episodes_without_machines(kept["episodes"])
    return without_judges(kept, names)


def _episodes_without_machines(section: dict) -> dict:
    """The episode section without what an extraction run's model said: each run's own
    validator verdict (`run_verdict`) and the runs' own labels compared (`axes`)."""
    section = without_keys(section, {"run_verdict"})
    section["comparisons"] = [
        {k: v for k, v in c.items() if k != "axes"} for c in section.get("comparisons") or []
    ]
    return section


def without_keys(data, keys: set[str]):
    """`data` (dicts, lists, values) without any dict entry keyed by one of `keys`."""
    if isinstance(data, dict):
        return {k: without_keys(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [without_keys(v, keys) for v in data]
    return data


# -- episodes (issue 21): the episode card's reader, and the blindness of its judgements ------
#
# The cards' rule, said of an episode: whoever annotates it (an annotator of its group) never
# sees another annotator's judgement of it while it is in round 1 (`revealed` False: the
# server's replay of its judgements, episodes/rounds.py), whatever other role they hold; the
# group's moderator and the study's leads who do not annotate it may. A machine judge's
# judgement and an extraction run's own verdict and labels (Episode.run_valid, run_labels)
# reach neither annotators nor moderators.


@dataclass
class EpisodeSeat:
    """An episode as one user may open it: in which group, and as what."""

    episode: Episode
    group: Group
    is_annotator: bool  # judges it in `group` (the form)
    is_moderator: bool  # the group's moderator, or a lead, not annotating it (read only)


def get_episode_for_member(
    user, study: Study, role: str, episode_id: int, group_id: int | None = None
) -> EpisodeSeat:
    """An episode of `study` in a group that annotates episodes: for one of that group's
    annotators (their own group, whatever `group_id` asks), or for its moderator or a lead
    (`group_id` picks one of the groups sharing the episode's conversation); the 404 of an
    episode that does not exist for anyone else."""
    episode = get_object_or_404(
        Episode.objects.select_related("conversation", "run"),
        pk=episode_id,
        conversation__study=study,
    )
    groups = list(
        Group.objects.filter(
            assignments__conversation_id=episode.conversation_id, unit=Unit.EPISODE
        ).order_by("name")
    )
    own = next((g for g in groups if annotates(user, g)), None)
    if own is not None:
        if episode_hidden_from_annotator(user, own, episode):
            raise Http404("No such episode")
        group, is_annotator = own, True
    else:
        mine = [g for g in groups if role == Role.LEAD or g.moderator_id == user.pk]
        group = next((g for g in mine if g.pk == group_id), None) if group_id else None
        group = group or (mine[0] if mine else None)
        is_annotator = False
    if group is None:
        raise Http404("No such episode")
    episode.conversation.study = group.study = study
    return EpisodeSeat(episode, group, is_annotator, not is_annotator)


def may_see_episode_judgements(user, group: Group, revealed: bool) -> bool:
    """May `user` see the other annotators' judgements of an episode in `group`, whose
    round 1 is over when `revealed`? Access to the episode is checked elsewhere."""
    return revealed or not annotates(user, group)


def episode_judgements(user, episode: Episode, group: Group, revealed: bool):
    """The current judgements of `episode` in `group` that `user` may read, oldest round
    first: their own always; the group's other annotators' only when
    may_see_episode_judgements; never a machine judge's, nor anyone's who is not an
    annotator of the group (another group's, a removed seat's)."""
    voters = set(group.annotators.values_list("pk", flat=True))
    if revealed and user.pk in voters:
        # an annotator seated after round 1 (a decided episode stays decided: rounds.py)
        # reads nobody's judgement before they judged it in round 1 themselves
        revealed = EpisodeJudgement.objects.filter(
            episode=episode, group=group, annotator=user, round=1, is_current=True
        ).exists()
    shown = voters if may_see_episode_judgements(user, group, revealed) else {user.pk}
    rows = EpisodeJudgement.objects.filter(
        episode=episode, group=group, is_current=True, annotator_id__in=shown & voters
    )
    return rows.select_related("annotator").order_by("round", "annotator__username")


def may_see_episode_discussion(user, seat: EpisodeSeat, revealed: bool) -> bool:
    """May `user` read an episode's discussion thread and its moderator's decision in
    `seat.group`? Its moderator or a lead who does not annotate it: always. One of its
    annotators: only once round 1 is over (`revealed`) and they have judged it in round 1
    themselves (an annotator seated later never reads what the others said of it first)."""
    if not seat.is_annotator:
        return True
    return (
        revealed
        and EpisodeJudgement.objects.filter(
            episode=seat.episode, group=seat.group, annotator=user, round=1, is_current=True
        ).exists()
    )
