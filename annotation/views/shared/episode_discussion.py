"""What the episode card shows of an episode's moderation and discussion (issue 21), shared
by the card (views/episode_card.py) and the moderator's and the thread's posts
(views/episode_moderation.py, whose refusals send back these partials alone)."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from ...access import EpisodeSeat, may_see_episode_discussion
from ...actions import episode_decisions
from ...episodes.reasons import INVALID_REASONS
from ...hotkeys import with_keys
from ...models import CardStatus

# the verdict's keys on the annotators' form (views/episode_card.py) and the moderator's:
# valid ("passes") / not valid: card keys no type is given; s and f skip and flag, as on a
# turn's card (episode/_skip_flag.html)
VALID_KEY, INVALID_KEY = "p", "n"


def reasons_keyed() -> list[dict]:
    """The invalid reasons in order, each with its key (1, 2, ...)."""
    return [
        {"code": code, "text": text, "key": str(i), "sub": "." in code}
        for i, (code, text) in enumerate(INVALID_REASONS.items(), start=1)
    ]


def labels_in_words(labels: dict | None, types) -> str:
    """{axis: [codes]} by the axes' and types' names: "Symptom: Scope overreach; ..."."""
    names = {(t.axis.code, t.code): t.name for t in types}
    axes = {t.axis.code: t.axis.name for t in types}
    return "; ".join(
        f"{axes.get(a, a)}: {', '.join(names.get((a, c), c) for c in codes)}"
        for a, codes in (labels or {}).items()
    )


def decide_form(study, posted=None) -> dict:
    """The moderator's decide form: the types keyed as on the annotators' form, what was
    posted (a refused decision) ticked and chosen again."""
    types = with_keys(study.taxonomy_version.type_list())
    ticked = set(posted.getlist("types")) if posted is not None else set()
    for t in types:
        t.value = f"{t.axis.code}:{t.code}"
        t.ticked = t.value in ticked
    return {
        "decide_types": types,
        "decide_reasons": reasons_keyed(),
        "decide_verdict": posted.get("valid", "") if posted is not None else "",
        "decide_reason": posted.get("invalid_reason", "") if posted is not None else "",
        "decide_rationale": posted.get("rationale", "") if posted is not None else "",
        "valid_key": VALID_KEY,
        "invalid_key": INVALID_KEY,
    }


def moderation_context(request: HttpRequest, seat: EpisodeSeat, state) -> dict:
    """What the episode card shows of the moderation and the discussion: the decision and
    the thread to whoever may read them, the decide form to its moderator while the episode
    is escalated, the comment box while it is discussed (disputed or escalated)."""
    study = seat.group.study
    sees = may_see_episode_discussion(request.user, seat, state.revealed)
    decision = episode_decisions.current_decision(seat.episode, seat.group) if sees else None
    if decision is not None:
        decision.reason_text = INVALID_REASONS.get(decision.invalid_reason, "")
        decision.labels_text = labels_in_words(decision.labels, study.taxonomy_version.type_list())
    discussed = state.status in (CardStatus.DISPUTED, CardStatus.ESCALATED)
    can_decide = seat.is_moderator and state.status == CardStatus.ESCALATED
    return {
        "sees_discussion": sees,
        "decision": decision,
        "can_decide": can_decide,
        "can_comment": sees and discussed,
        "comments": list(episode_decisions.thread(seat.episode, seat.group)) if sees else [],
        "thread_url": reverse("episode_comment", args=[study.slug, seat.episode.pk]),
        "decide_url": reverse("episode_decide", args=[study.slug, seat.episode.pk]),
        **(decide_form(study) if can_decide else {}),
    }
