"""The suite's factories: named users (alice, bob, ...), a study on the default taxonomy,
groups, conversations, and labels through the one entry point the pages, the API and the
import use (Annotation.submit). Tests import them from here; fixtures live in conftest.py."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Conversation, Group, Kind, Role, Study, Turn
from taxonomy.models import Taxonomy

PASSWORD = "pw-" + "secret"
# three types of the default preset (interaction-smells)
AMBIGUOUS, INCOMPLETE, ROLLBACK = "ambiguous_instruction", "incomplete_instruction", "code_rollback"
# the header htmx sends: a view answers it with a partial
HTMX = {"HTTP_HX_REQUEST": "true"}


def make_user(username: str, password: str = PASSWORD):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        user.save()
    return user


def make_study(slug: str = "s1", taxonomy: str = "interaction-smells") -> Study:
    version = Taxonomy.load_preset(taxonomy)
    return Study.objects.create(slug=slug, name=slug.upper(), taxonomy_version=version)


def make_group(study: Study, name: str, annotators=(), moderator=None, kind=Kind.STUDENT) -> Group:
    group = Group.objects.create(study=study, name=name, kind=kind, moderator=moderator)
    for user in annotators:
        study.add_member(user, Role.ANNOTATOR, kind)
        group.annotators.add(user)
    if moderator is not None:
        study.add_member(moderator, Role.MODERATOR, Kind.EXPERT)
    return group


def make_conversation(
    study: Study, external_id: str = "c1", n_turns: int = 3, group: Group | None = None
) -> Conversation:
    conversation = Conversation.objects.create(
        study=study, external_id=external_id, source_format="native", n_turns=n_turns
    )
    if group is not None:
        Conversation.objects.filter(pk=conversation.pk).assign(group)
    Turn.objects.bulk_create(
        Turn(
            conversation=conversation,
            index=i,
            user_text=f"{external_id}: please write function number {i}",
            reply_text=f"```python\ndef f{i}(x):\n    return x * {i}\n```",
        )
        for i in range(1, n_turns + 1)
    )
    return conversation


def types_of(study: Study, *codes: str) -> list:
    """The types of the study's current taxonomy version with these codes (read afresh: an
    accepted proposal moves the study to a new version)."""
    version = Study.objects.get(pk=study.pk).taxonomy_version
    by_code = version.types_by_code()
    return [by_code[code] for code in codes]


def label(turn: Turn, user, *codes: str, round: int = 1, group: Group | None = None, **fields):
    """`user`'s labels on the card (no codes: "no smell"), submitted as the pages submit
    them. `group`: the group the user labels the card in, by default theirs (or the card's
    only group); `fields`: note, evidence, confidence, source."""
    conversation = turn.conversation
    if group is None:
        group = conversation.group_of(user) or conversation.groups.get()
    return Annotation.submit(
        turn=turn,
        group=group,
        annotator=user,
        round=round,
        types=types_of(conversation.study, *codes),
        **fields,
    )


def study_url(name: str, turn: Turn | None = None, slug: str = "s1") -> str:
    """A study page's URL by name, of a card when `turn` is given."""
    return reverse(name, args=[slug] if turn is None else [slug, turn.pk])


def token_client(user) -> APIClient:
    """An API client authenticated the way scripts are: with a DRF token."""
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client
