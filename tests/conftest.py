"""The suite's shared fixtures: named users (alice, bob, ...), a study on the default taxonomy,
a lead, and `media` (MEDIA_ROOT in the test's own folder). The factories behind them are in
tests/factories.py, which tests import; nothing imports this file."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from hypothesis import settings as hypothesis_settings

from annotation.models import Kind, Role

from .factories import make_study, make_user

# Property tests check rules, not speed (benchmarks/ measure speed): no per-example deadline,
# which a loaded machine (CI beside other work, a database's first query) would trip at random.
hypothesis_settings.register_profile("cardsort", deadline=None)
hypothesis_settings.load_profile("cardsort")


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


_client_login = Client.login


def _login_with_a_request(self, **credentials):
    """The test client's login() as a browser's: django-axes (the login attempts' limits)
    checks every authenticate() and needs the request it comes from."""
    credentials.setdefault("request", RequestFactory().post("/accounts/login/"))
    return _client_login(self, **credentials)


Client.login = _login_with_a_request


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The API's throttling counts requests in the cache: each test starts with none."""
    from django.core.cache import cache

    cache.clear()


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
def moderator(db):
    return make_user("moderator")


@pytest.fixture
def study(db):
    return make_study()


@pytest.fixture
def lead(db, study):
    user = make_user("lead")
    study.add_member(user, Role.LEAD, Kind.EXPERT)
    return user


@pytest.fixture
def media(settings, tmp_path):
    """MEDIA_ROOT (uploads, exports) in the test's own folder."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT
