"""The session page's world (issue 21 point 2): the agents study `ag` (tests/episodes/
conftest.py: s1 of 4 turns, s2 of 3, each turn with a thinking part, a tool call and a tool
result) whose sessions are assigned to the episode group E1 (alice, bob; moderator moe);
run `gpt` extracted s1 1-2 and s1 3-4 (with its own verdict, labels and a telling
confidence, which no annotator may read) and s2 1-3. A turn group T1 (carol) shares s2."""

from __future__ import annotations

from annotation.importers.episodes import import_episodes
from annotation.models import Conversation, Episode, Group, Role, Unit
from tests.factories import make_group, make_user

from .conftest import episode, write_jsonl

CONFIDENCE = 0.8137  # the run's confidence: never on an annotator's page
RUN_REASON = "normative_prior_bias"
RUN_LABEL = "scope_overreach"


def build(study, tmp_path, alice, bob) -> dict:
    records = [
        episode("s1", 1, 2, confidence=CONFIDENCE, valid=False, invalid_reason=RUN_REASON),
        episode("s1", 3, 4, confidence=CONFIDENCE, labels={"symptom": [RUN_LABEL]}),
        episode("s2", 1, 3, confidence=CONFIDENCE),
    ]
    import_episodes(study, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    moe, carol, lena = make_user("moe"), make_user("carol"), make_user("lena")
    group = make_group(study, "E1", annotators=[alice, bob], moderator=moe)
    Group.objects.filter(pk=group.pk).update(unit=Unit.EPISODE)
    group.refresh_from_db()
    turns = make_group(study, "T1", annotators=[carol])
    s1, s2 = (study.conversations.get(external_id=name) for name in ("s1", "s2"))
    Conversation.objects.filter(pk__in=[s1.pk, s2.pk]).assign(group)
    Conversation.objects.filter(pk=s2.pk).assign(turns)
    study.add_member(lena, Role.LEAD)
    e1, e2 = Episode.objects.filter(conversation=s1).order_by("first_turn")
    (e3,) = Episode.objects.filter(conversation=s2)
    return {
        "study": study, "group": group, "turn_group": turns, "s1": s1, "s2": s2,
        "extracted": [e1, e2], "s2_episode": e3, "moe": moe, "carol": carol, "lena": lena,
    }  # fmt: skip


def session_url(world, conversation=None, name="episode_session", *more) -> str:
    from django.urls import reverse

    conversation = conversation or world["s1"]
    args = [world["study"].slug, conversation.pk, *more]
    return reverse(name, args=args)
