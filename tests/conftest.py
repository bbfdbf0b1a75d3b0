"""Small factories shared by the suite: named users (alice, bob, ...), a study on the default
taxonomy, groups and conversations."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Conversation, Group, Kind, Role, Study, Turn
from taxonomy.models import Taxonomy


def pytest_collection_modifyitems(config, items):
    """Tests marked `postgres` need the real server (COPY, concurrent connections): they run
    in CI's second pass (DATABASE_URL set) and are deselected, not skipped, on SQLite."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    keep = [i for i in items if not i.get_closest_marker("postgres")]
    dropped = [i for i in items if i.get_closest_marker("postgres")]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def make_user(username: str, password: str = "pw-" + "secret"):
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


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # make_user sets real passwords; PBKDF2 costs ~0.5 s a user and no test is about hashing
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice(db):
    return make_user("alice")


@pytest.fixture
def bob(db):
    return make_user("bob")


@pytest.fixture
def charlie(db):
    return make_user("charlie")


@pytest.fixture
def study(db):
    return make_study()


@pytest.fixture
def lead(db, study):
    user = make_user("lead")
    study.add_member(user, Role.LEAD, Kind.EXPERT)
    return user
