"""The split check's copies get keys like any conversation (issue 20, defect 1): two cards
made from conversations with one external id are two keys of the new study."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation.intake.splitcheck.common import Card, Size, new_study
from annotation.models import Conversation

pytestmark = pytest.mark.django_db


def test_two_cards_with_one_id_get_two_keys(study):
    cards = [Card("x", {"n": i}, f"is entry {i} one topic?") for i in (1, 2)]
    with transaction.atomic():
        check = new_study(
            study,
            "check",
            preset="split-check-entries",
            name="",
            methods="",
            cards=cards,
            population=2,
            drawn=Size(2),
            seed=1,
        )
    rows = Conversation.objects.filter(study=check).order_by("pk")
    assert list(rows.values_list("external_id", "key")) == [("x", "x"), ("x", "x~2")]
