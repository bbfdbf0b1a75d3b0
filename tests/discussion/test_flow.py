"""The rounds through the pages: round 1 on the card, round 2 on the discussion page, the
moderator's decision; every change kept, round 1 untouched."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState, Comment, Consensus
from tests.factories import HTMX, make_conversation, make_group, study_url

pytestmark = pytest.mark.django_db


def card_labels(client, user, turn, *codes, note=""):
    """Round 1 through the annotator's card page."""
    client.force_login(user)
    data = {"types": list(codes), "note": note} if codes else {"no_smell": "1", "note": note}
    response = client.post(study_url("card", turn), data, **HTMX)
    assert response.status_code == 200, response.content.decode()[:500]


def discussion_labels(client, user, turn, *codes, round=2, htmx=True, note=""):
    client.force_login(user)
    data = {"types": list(codes), "round": round, "note": note}
    return client.post(study_url("discussion", turn), data, **(HTMX if htmx else {}))


def state_of(turn) -> tuple[str, int]:
    state = CardState.objects.get(turn=turn)
    return state.status, state.round


def round_1(turn) -> list[tuple[int, str, frozenset[str], bool]]:
    rows = Annotation.objects.filter(turn=turn, round=1).select_related("annotator")
    return sorted((a.pk, a.annotator.username, a.codes, a.is_current) for a in rows)


def test_it_agrees_unanimously_in_round_1(client, alice, bob, turns_a):
    turn = turns_a[0]
    card_labels(client, alice, turn, "code_rollback")
    card_labels(client, bob, turn, "code_rollback")

    consensus = Consensus.objects.get(turn=turn)
    assert (consensus.method, consensus.from_round, consensus.codes) == (
        "unanimous",
        1,
        frozenset({"code_rollback"}),
    )
    html = client.get(study_url("discussion", turn)).content.decode()
    assert 'data-method="unanimous"' in html
    assert 'id="revise"' not in html  # nothing left to revise


def test_it_reaches_consensus_by_discussion(client, alice, bob, turns_a):
    turn = turns_a[1]
    card_labels(client, alice, turn, "ambiguous_instruction", note="alice thinks ambiguous")
    card_labels(client, bob, turn, "must_do_omission", note="bob thinks omission")
    before = round_1(turn)
    assert state_of(turn) == ("disputed", 2)

    # alice sees bob's labels and note, and her own form prefilled with her round-1 labels
    client.force_login(alice)
    html = client.get(study_url("discussion", turn)).content.decode()
    assert "bob thinks omission" in html and "Must-Do Omission" in html
    assert 'value="ambiguous_instruction" data-hotkey="1" checked' in html
    assert "Save labels for round 2" in html

    response = discussion_labels(client, alice, turn, "must_do_omission", note="ok, omission")
    assert response.status_code == 200
    assert state_of(turn) == ("disputed", 2)  # bob has not confirmed yet
    assert html.count('id="discussion"') == 1
    assert "<html" not in response.content.decode()

    discussion_labels(client, bob, turn, "must_do_omission", htmx=False)
    assert state_of(turn) == ("agreed", 2)
    consensus = Consensus.objects.get(turn=turn)
    assert (consensus.method, consensus.from_round, consensus.decided_by) == ("discussion", 2, None)
    assert consensus.codes == frozenset({"must_do_omission"})
    assert round_1(turn) == before  # same rows, same types, still current

    html = client.get(study_url("discussion", turn)).content.decode()
    assert 'data-method="discussion"' in html and "changed since round 1" in html


def test_it_escalates_and_the_moderator_decides(client, alice, bob, moderator, turns_a):
    turn = turns_a[2]
    card_labels(client, alice, turn, "ambiguous_instruction")
    card_labels(client, bob, turn, "must_do_omission")
    before = round_1(turn)
    discussion_labels(client, alice, turn, "ambiguous_instruction")
    discussion_labels(client, bob, turn, "must_do_omission")
    assert state_of(turn) == ("escalated", 2)
    # escalated: nothing more to revise
    response = discussion_labels(client, alice, turn, "must_do_omission")
    assert response.status_code == 409
    assert "Round 2 is not open for this card (it is escalated)" in response.content.decode()

    client.force_login(moderator)
    queue = client.get(study_url("moderate_queue")).content.decode()
    assert f'data-turn-id="{turn.pk}" data-status="escalated"' in queue
    page = client.get(study_url("discussion", turn)).content.decode()
    assert 'id="decide"' in page

    missing = client.post(study_url("decide", turn), {"types": ["must_do_omission"]}, **HTMX)
    assert missing.status_code == 422
    assert "Rationale" in missing.content.decode()
    assert not Consensus.objects.exists()

    data = {"types": ["ambiguous_instruction", "must_do_omission"], "rationale": "both hold"}
    response = client.post(study_url("decide", turn), data, **HTMX)
    assert response.status_code == 200
    consensus = Consensus.objects.get(turn=turn)
    assert (consensus.method, consensus.decided_by, consensus.rationale) == (
        "moderator",
        moderator,
        "both hold",
    )
    assert consensus.codes == frozenset({"ambiguous_instruction", "must_do_omission"})
    assert state_of(turn) == ("agreed", 2)
    html = response.content.decode()
    assert 'data-method="moderator"' in html and "by moderator" in html
    assert round_1(turn) == before


def test_it_decides_once_when_the_decision_is_posted_twice(client, moderator, disputed):
    client.force_login(moderator)
    data = {"types": ["code_rollback"], "rationale": "rollback"}
    first = client.post(study_url("decide", disputed), data)
    assert first.status_code == 302
    for headers in ({}, HTMX):
        again = client.post(
            study_url("decide", disputed), {"no_smell": "1", "rationale": "x"}, **headers
        )
        assert again.status_code == 409
        html = again.content.decode()
        assert "already has a consensus (moderator, by moderator" in html
        assert "nothing was changed" in html
    assert Consensus.objects.filter(turn=disputed).count() == 1
    assert Consensus.objects.get(turn=disputed).codes == frozenset({"code_rollback"})


def test_it_lets_the_moderator_step_in_before_escalation(client, alice, moderator, disputed):
    client.force_login(moderator)
    r = client.post(
        study_url("comment", disputed), {"text": "Look at the second sentence."}, **HTMX
    )
    assert r.status_code == 200
    client.post(
        study_url("decide", disputed), {"types": ["code_rollback"], "rationale": "see thread"}
    )
    assert state_of(disputed)[0] == "agreed"
    # alice's round-2 form is gone and a late post is refused without a new row
    response = discussion_labels(client, alice, disputed, "code_rollback")
    assert response.status_code == 409
    assert "(it is agreed)" in response.content.decode()
    assert not Annotation.objects.filter(turn=disputed, round=2).exists()


def test_it_records_a_double_submitted_round_2_label_once(client, alice, disputed):
    for _ in range(2):
        response = discussion_labels(client, alice, disputed, "must_do_omission")
        assert response.status_code == 200
    assert Annotation.objects.filter(turn=disputed, annotator=alice, round=2).count() == 1


def test_it_refuses_a_stale_form_for_a_round_that_closed(client, study, alice, bob, disputed):
    study.discussion_rounds = 2
    study.save()
    discussion_labels(client, alice, disputed, "ambiguous_instruction")
    discussion_labels(client, bob, disputed, "must_do_omission")
    assert state_of(disputed) == ("disputed", 3)

    response = discussion_labels(client, alice, disputed, "code_rollback", round=2)
    assert response.status_code == 409
    assert "This form was for round 2, but the card is in round 3" in response.content.decode()
    assert Annotation.objects.filter(turn=disputed, annotator=alice, round=2).count() == 1
    assert not Annotation.objects.filter(turn=disputed, round=3).exists()


def test_it_runs_two_discussion_rounds_when_configured(client, study, alice, bob, disputed):
    study.discussion_rounds = 2
    study.save()
    discussion_labels(client, alice, disputed, "ambiguous_instruction")
    discussion_labels(client, bob, disputed, "must_do_omission")
    assert state_of(disputed) == ("disputed", 3)
    client.force_login(alice)
    html = client.get(study_url("discussion", disputed)).content.decode()
    assert "Save labels for round 3" in html
    assert 'data-round="3"' in html

    discussion_labels(client, alice, disputed, "must_do_omission", round=3)
    discussion_labels(client, bob, disputed, "must_do_omission", round=3)
    consensus = Consensus.objects.get(turn=disputed)
    assert (consensus.method, consensus.from_round) == ("discussion", 3)


def test_it_escalates_after_two_discussion_rounds(client, study, alice, bob, disputed):
    study.discussion_rounds = 2
    study.save()
    for round in (2, 3):
        discussion_labels(client, alice, disputed, "ambiguous_instruction", round=round)
        discussion_labels(client, bob, disputed, "must_do_omission", round=round)
    assert state_of(disputed) == ("escalated", 3)


def test_it_needs_all_three_of_a_group_of_three(client, study, alice, bob, dora):
    group = make_group(study, "Three", [alice, bob, dora])
    turn = make_conversation(study, "c3", n_turns=1, group=group).turns.get()
    card_labels(client, alice, turn, "code_rollback")
    card_labels(client, bob, turn, "code_rollback")
    card_labels(client, dora, turn, "repetitive_response")
    assert state_of(turn) == ("disputed", 2)

    client.force_login(dora)
    html = client.get(study_url("discussion", turn)).content.decode()
    assert html.count('<td data-annotator="') == 3 * 2  # three columns, rounds 1 and 2

    discussion_labels(client, alice, turn, "code_rollback")
    discussion_labels(client, bob, turn, "code_rollback")
    assert state_of(turn) == ("disputed", 2)  # dora has not spoken
    discussion_labels(client, dora, turn, "code_rollback")
    consensus = Consensus.objects.get(turn=turn)
    assert (consensus.method, consensus.codes) == ("discussion", frozenset({"code_rollback"}))


def test_it_shows_comments_in_order_with_their_authors(client, alice, bob, disputed):
    posts = [(alice, "First, from alice."), (bob, "Then bob."), (alice, "Alice again.")]
    for user, text in posts:
        client.force_login(user)
        response = client.post(study_url("comment", disputed), {"text": text}, **HTMX)
        assert response.status_code == 200
        assert response.content.decode().lstrip().startswith('<section class="panel" id="thread">')

    html = client.get(study_url("discussion", disputed)).content.decode()
    positions = [html.index(text) for _, text in posts]
    assert positions == sorted(positions)
    assert html.count('data-author="alice"') == 2 and html.count('data-author="bob"') == 1
    rows = list(Comment.objects.values_list("author__username", "round", "text"))
    assert rows == [
        ("alice", 2, "First, from alice."),
        ("bob", 2, "Then bob."),
        ("alice", 2, "Alice again."),
    ]


def test_it_refuses_an_empty_comment_and_a_duplicate(client, alice, disputed):
    client.force_login(alice)
    response = client.post(study_url("comment", disputed), {"text": "   "}, **HTMX)
    assert response.status_code == 422
    assert "Write a comment before sending it." in response.content.decode()
    assert not Comment.objects.exists()

    for _ in range(2):
        assert (
            client.post(study_url("comment", disputed), {"text": "Same words"}).status_code == 302
        )
    assert Comment.objects.count() == 1


def test_it_refuses_a_half_filled_round_2_form(client, alice, disputed):
    response = discussion_labels(client, alice, disputed)
    assert response.status_code == 422
    assert "Pick at least one type" in response.content.decode()
    assert not Annotation.objects.filter(turn=disputed, round=2).exists()
