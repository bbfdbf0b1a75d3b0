"""Fixtures of the lead's conversation browser tests: two groups of two annotators, and the
lead logged in. The conversations are made with helpers.make_browsable."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.factories import make_group, make_user


@pytest.fixture(autouse=True)
def fresh_cache():
    """The browser caches a study's choices; a test starts with none cached."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def dave(db):
    return make_user("dave")


@pytest.fixture
def erin(db):
    return make_user("erin")


@pytest.fixture
def groups(study, alice, bob, dave, erin):
    """G1 (alice, bob) and G2 (dave, erin)."""
    return make_group(study, "G1", [alice, bob]), make_group(study, "G2", [dave, erin])


@pytest.fixture
def lead_client(client, lead):
    client.force_login(lead)
    return client
