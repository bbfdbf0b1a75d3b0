from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Annotation, Conversation, Turn
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def group(study, alice, bob):
    return make_group(study, "g1", [alice, bob])


@pytest.fixture
def conversation(study, group):
    return make_conversation(study, "conv-a", n_turns=3, group=group)


def card_url(study, turn):
    return reverse("card", args=[study.slug, turn.pk])


def post_labels(client, study, turn, htmx=True, **data):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(card_url(study, turn), data, **headers)


def labels_of(user, turn, round=1):
    a = Annotation.objects.get(turn=turn, annotator=user, round=round, is_current=True)
    return {t.code for t in a.types.all()}


def test_it_shows_the_turn_with_code_kept_readable(client, study, alice, conversation):
    turn = conversation.turns.get(index=2)
    client.force_login(alice)
    r = client.get(card_url(study, turn))
    html = r.content.decode()
    assert r.status_code == 200
    assert "conv-a: please write function number 2" in html
    assert '<pre data-lang="python" tabindex="0"><code><span class="k">def</span>' in html
    assert re.sub(r"<[^>]+>", "", html).count("def f2(x):\n    return x * 2") == 1
    assert 'data-hotkey="1"' in html and 'value="ambiguous_instruction"' in html
    assert "The user&#x27;s instruction admits several interpretations" in html
    assert 'id="progress"' in html and "0 of 3" in html


def test_it_saves_labels_and_serves_the_next_card_as_a_partial(client, study, alice, conversation):
    t1, t2, _ = conversation.turns.all()
    client.force_login(alice)
    r = post_labels(client, study, t1, types=["must_do_omission", "code_rollback"], note="x")
    assert r.status_code == 200
    assert labels_of(alice, t1) == {"must_do_omission", "code_rollback"}
    html = r.content.decode()
    assert html.lstrip().startswith(f'<div id="card" data-turn-id="{t2.pk}"')
    assert "<html" not in html
    assert r["HX-Push-Url"] == card_url(study, t2)
    assert "1 of 3" in html


def test_it_records_no_smell_as_an_empty_set(client, study, alice, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, no_smell="1")
    assert labels_of(alice, t1) == set()
    # "not yet annotated" is different: no row at all for bob
    assert not Annotation.objects.filter(turn=t1, annotator__username="bob").exists()


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "Pick at least one type"),
        ({"types": ["code_rollback"], "no_smell": "1"}, "not both"),
    ],
)
def test_it_refuses_an_ambiguous_submit(client, study, alice, conversation, data, message):
    t1 = conversation.turns.first()
    client.force_login(alice)
    r = post_labels(client, study, t1, **data)
    assert message in r.content.decode()
    assert not Annotation.objects.filter(turn=t1).exists()


def test_it_refuses_an_unknown_type(client, study, alice, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    r = post_labels(client, study, t1, htmx=False, types=["not_a_type"])
    assert r.status_code == 422
    assert not Annotation.objects.filter(turn=t1).exists()


def test_it_keeps_earlier_revisions_as_history(client, study, alice, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, types=["code_rollback"])
    post_labels(client, study, t1, types=["repetitive_response"])
    assert labels_of(alice, t1) == {"repetitive_response"}
    history = Annotation.objects.filter(turn=t1, annotator=alice).order_by("id")
    assert [a.is_current for a in history] == [False, True]
    assert {t.code for t in history[0].types.all()} == {"code_rollback"}


def test_it_shows_my_own_labels_when_i_go_back(client, study, alice, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, types=["signature_mismatch"], note="alice's note")
    html = client.get(card_url(study, t1)).content.decode()
    assert 'value="signature_mismatch" data-hotkey="5" checked' in html
    assert "alice&#x27;s note" in html


def test_bob_does_not_see_alices_round_1_labels(client, study, alice, bob, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, types=["signature_mismatch"], note="secret-note")
    client.force_login(bob)
    html = client.get(card_url(study, t1)).content.decode()
    assert " checked" not in html
    assert "secret-note" not in html
    ctx = client.get(reverse("card_context", args=[study.slug, t1.pk])).content.decode()
    assert "secret-note" not in ctx


def test_it_locks_round_1_once_both_have_submitted(client, study, alice, bob, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, types=["code_rollback"])
    post_labels(client, study, t1, types=["repetitive_response"])  # still open: bob has not
    assert labels_of(alice, t1) == {"repetitive_response"}
    client.force_login(bob)
    post_labels(client, study, t1, no_smell="1")
    client.force_login(alice)
    r = post_labels(client, study, t1, types=["ambiguous_instruction"])
    assert "left round 1" in r.content.decode()
    assert labels_of(alice, t1) == {"repetitive_response"}


def test_charlie_cannot_see_a_card_of_a_group_he_is_not_in(client, study, charlie, conversation):
    t1 = conversation.turns.first()
    other = make_group(study, "g2", [charlie])
    make_conversation(study, "conv-c", group=other)
    client.force_login(charlie)
    assert client.get(card_url(study, t1)).status_code == 404
    assert post_labels(client, study, t1, types=["code_rollback"]).status_code == 404
    assert client.get(reverse("card_context", args=[study.slug, t1.pk])).status_code == 404
    assert not Annotation.objects.filter(turn=t1).exists()


def test_a_non_member_gets_404_for_the_whole_study(client, study, conversation):
    outsider = make_user("mallory")
    client.force_login(outsider)
    for name, args in [("study", []), ("queue", []), ("my_cards", [])]:
        assert client.get(reverse(name, args=[study.slug, *args])).status_code == 404


def test_it_resumes_at_my_first_unlabelled_card(client, study, alice, conversation):
    t1, t2, t3 = conversation.turns.all()
    client.force_login(alice)
    post_labels(client, study, t1, types=["code_rollback"])
    r = client.get(reverse("queue", args=[study.slug]))
    assert r.status_code == 302 and r["Location"] == card_url(study, t2)
    post_labels(client, study, t2, no_smell="1")
    post_labels(client, study, t3, no_smell="1")
    r = client.get(reverse("queue", args=[study.slug]))
    assert r.status_code == 200 and "All done" in r.content.decode()


def test_the_last_submit_sends_the_browser_to_the_done_page(client, study, alice, conversation):
    turns = list(conversation.turns.all())
    client.force_login(alice)
    for t in turns[:-1]:
        post_labels(client, study, t, no_smell="1")
    r = post_labels(client, study, turns[-1], no_smell="1")
    assert r["HX-Redirect"] == reverse("queue", args=[study.slug])


def test_it_shows_earlier_turns_on_request(client, study, alice, conversation):
    t3 = conversation.turns.get(index=3)
    client.force_login(alice)
    html = client.get(reverse("card_context", args=[study.slug, t3.pk])).content.decode()
    assert "function number 1" in html and "function number 2" in html
    assert "function number 3" not in html


def _grow_study(study, group, n):
    convs = Conversation.objects.bulk_create(
        Conversation(study=study, external_id=f"bulk-{i}", source_format="native", n_turns=1)
        for i in range(n)
    )
    Conversation.objects.filter(pk__in=[c.pk for c in convs]).assign(group)
    Turn.objects.bulk_create(
        Turn(conversation=c, index=1, user_text="u", reply_text="r") for c in convs
    )


def _queries(client, fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        r = fn()
    assert r.status_code == 200
    return len(ctx.captured_queries)


def test_card_view_and_label_submit_use_the_same_queries_at_10_and_10000_conversations(
    client, study, alice, bob, group
):
    _grow_study(study, group, 10)
    client.force_login(alice)
    turns = list(Turn.objects.for_annotator(study, alice)[:4])
    small_get = _queries(client, lambda: client.get(card_url(study, turns[0])))
    small_post = _queries(
        client, lambda: post_labels(client, study, turns[0], types=["code_rollback"])
    )
    _grow_study(study, group, 9990)
    big_get = _queries(client, lambda: client.get(card_url(study, turns[1])))
    big_post = _queries(
        client, lambda: post_labels(client, study, turns[1], types=["code_rollback"])
    )
    assert (big_get, big_post) == (small_get, small_post)


def test_it_enforces_single_select_and_max_labels_axes(client, alice, bob):
    from tests.factories import make_study

    study = make_study("agents", taxonomy="agent-misalignment")
    group = make_group(study, "g", [alice, bob])
    turn = make_conversation(study, "session-1", n_turns=1, group=group).turns.get()
    client.force_login(alice)
    r = post_labels(client, study, turn, types=["DS1", "DS2"])
    assert "Damage severity: at most 1 type(s) per card." in r.content.decode()
    three_causes = [
        "instruction_following_failure",
        "underspecified_instruction",
        "other_indeterminate",
    ]
    r = post_labels(client, study, turn, types=three_causes)
    assert "Cause: at most 2 type(s) per card." in r.content.decode()
    assert not Annotation.objects.filter(turn=turn).exists()
    post_labels(client, study, turn, types=["scope_overreach", "DS1"])
    assert labels_of(alice, turn) == {"scope_overreach", "DS1"}


def checked_boxes(html: str) -> set[str]:
    """The type codes the form shows ticked."""
    import re

    return set(re.findall(r'name="types" value="([\w-]+)"[^>]* checked', html))


def test_a_refused_submit_shows_the_stored_labels_locked_and_says_why(
    client, study, alice, bob, conversation
):
    """Alice's card is open in her browser; bob submits, round 1 closes; her submit is
    refused and the form shows what is stored, not her refused ticks."""
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, types=["code_rollback"], note="stored note")
    client.force_login(bob)
    post_labels(client, study, t1, no_smell="1")
    client.force_login(alice)
    r = post_labels(client, study, t1, types=["ambiguous_instruction"], note="refused note")
    html = r.content.decode()
    assert r.status_code == 409
    assert checked_boxes(html) == {"code_rollback"}
    assert 'value="code_rollback" data-hotkey="8" checked disabled' in html
    assert "Not saved: This card has left round 1" in html
    assert "You had chosen: Ambiguous Instruction. Your note: “refused note”." in html
    assert ">stored note</textarea>" in html
    assert "data-unsaved" not in html
    assert labels_of(alice, t1) == {"code_rollback"}


def test_an_invalid_submit_comes_back_marked_as_not_saved(client, study, alice, conversation):
    t1 = conversation.turns.first()
    client.force_login(alice)
    r = post_labels(client, study, t1, types=["code_rollback"], no_smell="1", confidence="4")
    html = r.content.decode()
    assert r.status_code == 422
    assert "data-unsaved" in html and "Not saved: Choose either types" in html
    assert '<input type="radio" name="confidence" value="4" checked> 4 sure' in html
    assert client.get(card_url(study, t1)).content.decode().count("data-unsaved") == 0


def test_it_tells_the_browser_never_to_keep_a_copy_of_the_card(client, study, alice, conversation):
    """Back must show the labels as stored, not the browser's copy of the page."""
    client.force_login(alice)
    r = client.get(card_url(study, conversation.turns.first()))
    assert "no-store" in r["Cache-Control"]


def test_it_shows_a_key_beside_every_type_of_a_derived_version(client, study, alice, group):
    version, added = study.taxonomy_version.derive(
        add=[{"name": f"Proposed {i}", "definition": "d"} for i in (10, 11, 12)]
    )
    study.taxonomy_version = version
    study.save()
    turn = make_conversation(study, "conv-k", n_turns=1, group=group).turns.get()
    client.force_login(alice)
    html = client.get(card_url(study, turn)).content.decode()
    for code, key in zip(added.values(), "abe", strict=True):
        assert f'value="{code}" data-hotkey="{key}"' in html
    assert html.count("<kbd>") == 12 + 1 + 1 + 2 + 1  # types, no smell (0), Enter, s, f, ?


def test_a_post_to_a_locked_card_shows_the_stored_labels(client, study, alice, bob, conversation):
    """Enter on a locked card posts its disabled boxes as nothing: the answer is the stored
    labels and why nothing was saved, not an empty form waiting to be saved."""
    t1 = conversation.turns.first()
    client.force_login(alice)
    post_labels(client, study, t1, types=["code_rollback"])
    client.force_login(bob)
    post_labels(client, study, t1, no_smell="1")
    client.force_login(alice)
    html = post_labels(client, study, t1).content.decode()
    assert checked_boxes(html) == {"code_rollback"}
    assert "data-unsaved" not in html
    assert "Not saved: Pick at least one type" in html


def test_the_card_says_its_place_and_my_progress_among_my_cards_only(
    client, study, alice, bob, charlie, group, conversation
):
    """Counted over alice's conversations: another group's conversation, and labels of
    others, never count; the place runs across her conversations in queue order."""
    other = make_group(study, "g2", [charlie, make_user("dave")])
    make_conversation(study, "theirs", n_turns=4, group=other)
    second = make_conversation(study, "conv-b", n_turns=2, group=group)
    first_turns = list(conversation.turns.order_by("index"))
    for turn in first_turns[:2]:
        post_labels(client_for(client, alice), study, turn, types=["code_rollback"])
    post_labels(client_for(client, bob), study, first_turns[2], types=["code_rollback"])
    client.force_login(alice)
    html = client.get(card_url(study, second.turns.get(index=2))).content.decode()
    assert "<title>Card 5 ·" in html and "2 of 5 labelled" in html


def client_for(client, user):
    client.force_login(user)
    return client


def test_labels_given_as_a_judge_of_another_group_are_not_my_progress(
    client, study, alice, bob, charlie, group, conversation
):
    """alice annotates in g1 and judges g2: her judge's labels on g2's cards are a reference
    for g2, not cards of her queue."""
    theirs = make_group(study, "g2", [charlie, make_user("dave")])
    theirs.judges.add(alice)
    judged = make_conversation(study, "judged", n_turns=2, group=theirs)
    for turn in judged.turns.all():
        label(turn, alice, "code_rollback", group=theirs)
    label(conversation.turns.get(index=1), alice, "code_rollback")
    client.force_login(alice)
    html = client.get(card_url(study, conversation.turns.get(index=2))).content.decode()
    assert "1 of 3 labelled" in html
    assert "1 of 3 cards labelled" in client.get(reverse("study", args=[study.slug])).text


def test_the_confidence_scale_labels_each_point_and_shows_the_saved_one(
    client, study, alice, conversation
):
    from annotation.forms import CONFIDENCE

    turn = conversation.turns.get(index=1)
    label(turn, alice, "code_rollback", confidence=3)
    client.force_login(alice)
    page = client.get(card_url(study, turn)).content.decode()
    radios = re.findall(
        r'<label><input type="radio" name="confidence" value="(\d?)"( checked)?> ([^<]+)</label>',
        page,
    )
    assert [(value, text) for value, _, text in radios] == [("", "not given")] + [
        (str(i), f"{i} {word}") for i, word in CONFIDENCE.items()
    ]
    assert [value for value, checked, _ in radios if checked] == ["3"]
    assert "<legend>Confidence</legend>" in page


def test_the_card_header_says_where_the_session_ran(client, study, alice, conversation):
    """Issue 21 point 6: the modality and tool from the conversation's metadata."""
    turn = conversation.turns.get(index=1)
    client.force_login(alice)
    assert 'class="modality' not in client.get(card_url(study, turn)).content.decode()
    Conversation.objects.filter(pk=conversation.pk).update(
        metadata={"modality": "cli", "tool": "Claude Code"}
    )
    html = client.get(card_url(study, turn)).content.decode()
    assert re.search(r'class="modality[^"]*"[^>]*>cli · Claude Code</span>', html)
