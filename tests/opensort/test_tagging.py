"""Free tags on the card in the open sort (issue 11, point 1): the panel in place of the
types, one's own tags (several per card, new ones with a description, reused by name),
"no smell", a note, edits until the freeze, refusals that name the field and lose nothing;
the queue, progress, "My cards" and the home page count a tagged card as done; the lead's
switch into and out of the open sort; create_study --phase."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Annotation, FreeTag, Group, Kind, Phase, Role, Study, TagSet
from annotation.opensort import tagging
from tests.factories import (
    HTMX,
    label,
    make_conversation,
    make_group,
    make_user,
    study_url,
    token_client,
)
from tests.opensort.tag_helpers import cards_of, open_sort_group, post_tags

pytestmark = pytest.mark.django_db


@pytest.fixture
def cards(study, alice, bob):
    """Three cards of the experts alice and bob, whose study open-sorts."""
    return cards_of(study, open_sort_group(study, [alice, bob]))


def names(user, turn) -> set[str]:
    tag_set = TagSet.objects.get(turn=turn, annotator=user)
    return {t.name for t in tag_set.tags.all()}


# --- the panel -------------------------------------------------------------------------------


def test_the_card_shows_the_tag_panel_instead_of_the_types(client, alice, cards):
    client.force_login(alice)
    html = client.get(study_url("card", cards[0])).content.decode()
    assert "data-tags" in html and 'name="new_tag"' in html
    assert 'name="types"' not in html  # no type checkboxes
    assert 'id="guide"' not in html  # no guideline of types: the taxonomy does not exist yet


def test_a_group_of_its_own_open_sorts_while_the_study_closed_sorts(
    client, study, alice, bob, charlie
):
    tagging_group = open_sort_group(study, [alice], "experts", by_study=False)
    labelling = make_group(study, "students", [charlie])
    open_card = cards_of(study, tagging_group, "c1", 1)[0]
    closed_card = cards_of(study, labelling, "c2", 1)[0]
    client.force_login(alice)
    assert "data-tags" in client.get(study_url("card", open_card)).content.decode()
    client.force_login(charlie)
    html = client.get(study_url("card", closed_card)).content.decode()
    assert "data-tags" not in html and 'name="types"' in html


def test_it_saves_several_tags_with_descriptions_and_goes_on_to_the_next_card(client, alice, cards):
    client.force_login(alice)
    r = post_tags(
        client,
        cards[0],
        ("vague goal", "no success criterion"),
        note="hm",
        new=("no tests", "asks for none"),
    )
    assert r.status_code == 200
    assert r.headers["HX-Push-Url"] == study_url("card", cards[1])
    assert "Saved your tags: no tests, vague goal" in r.content.decode()
    assert names(alice, cards[0]) == {"vague goal", "no tests"}
    assert TagSet.objects.get(annotator=alice).note == "hm"
    described = dict(FreeTag.objects.values_list("name", "description"))
    assert described == {"vague goal": "no success criterion", "no tests": "asks for none"}


def test_a_plain_post_redirects_to_the_next_card(client, alice, cards):
    client.force_login(alice)
    r = post_tags(client, cards[0], "vague goal", htmx=False)
    assert r.status_code == 302 and r.url == study_url("card", cards[1])


def test_it_reuses_an_own_tag_by_name_whatever_the_case_and_spaces(client, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], ("vague goal", "first words"))
    post_tags(client, cards[1], ("  Vague   Goal ", "other words"))
    tag = FreeTag.objects.get()
    assert (tag.name, tag.description) == ("vague goal", "first words")
    assert TagSet.objects.get(turn=cards[1]).tags.get() == tag


def test_a_tag_given_twice_on_a_card_is_one_tag(client, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], "scope creep", "Scope creep", new=("scope  creep", ""))
    assert names(alice, cards[0]) == {"scope creep"}


def test_each_annotator_has_tags_of_their_own_even_of_the_same_name(client, alice, bob, cards):
    client.force_login(alice)
    post_tags(client, cards[0], ("vague goal", "alice's words"))
    client.force_login(bob)
    post_tags(client, cards[0], "vague goal")
    alices, bobs = (TagSet.objects.get(annotator=u).tags.get() for u in (alice, bob))
    assert alices != bobs
    assert (alices.author, bobs.author) == (alice, bob)
    assert bobs.description == ""  # never alice's description


def test_it_edits_the_tag_set_removing_and_adding_until_the_freeze(client, study, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], "vague goal", "no tests", note="first")
    post_tags(client, cards[0], "no tests", "scope creep", note="second")
    assert names(alice, cards[0]) == {"no tests", "scope creep"}
    assert TagSet.objects.count() == 1 and TagSet.objects.get().note == "second"
    # the card shows the stored set, to be changed again
    html = client.get(study_url("card", cards[0])).content.decode()
    assert 'data-tag="no tests"' in html and 'data-tag="scope creep"' in html
    assert 'data-tag="vague goal"' not in html
    # the freeze moves the group out of the open sort: no more tags
    Study.objects.filter(pk=study.pk).update(phase=Phase.CLOSED_SORT)
    group = Group.objects.get(study=study)
    with pytest.raises(tagging.NotOpenSorting):
        tagging.save_tag_set(turn=cards[0], group=group, annotator=alice, tags=[])
    assert 'name="types"' in client.get(study_url("card", cards[0])).content.decode()


def test_no_smell_is_an_empty_set(client, alice, cards):
    client.force_login(alice)
    r = post_tags(client, cards[0], no_smell=True)
    assert "Saved your tags: no smell" in r.content.decode()
    assert names(alice, cards[0]) == set()
    html = client.get(study_url("card", cards[0])).content.decode()
    assert 'data-hotkey="0" checked' in html


# --- refusals: the field named, nothing lost -----------------------------------------------


REFUSALS = [
    ({"tags": ["x" * 101]}, "a tag name has at most 100 characters (this one has 101)"),
    (
        {"tags": [("ok", "d" * 501)]},
        "Description of tag “ok”: at most 500 characters (this one has 501)",
    ),
    ({"tags": ["   "]}, "Tag 1: the name is blank"),
    ({"tags": []}, 'Add at least one tag, or tick "no smell" (key 0).'),
    ({"tags": ["ok"], "no_smell": True}, 'Choose either tags or "no smell", not both.'),
    ({"tags": ["ok"], "note": "n" * 10_001}, "Note: at most 10000 characters"),
]


@pytest.mark.parametrize(("given", "message"), REFUSALS)
def test_bad_input_is_refused_naming_the_field_and_keeps_the_stored_set(
    client, alice, cards, given, message
):
    client.force_login(alice)
    post_tags(client, cards[0], ("kept", "stored before"), note="kept note")
    r = post_tags(
        client,
        cards[0],
        *given["tags"],
        no_smell=given.get("no_smell", False),
        note=given.get("note", ""),
    )
    assert r.status_code == 422
    html = r.content.decode()
    assert "Not saved:" in html and message.replace('"', "&quot;") in html
    assert "data-unsaved" in html  # the input comes back, marked as not saved
    assert names(alice, cards[0]) == {"kept"}
    assert TagSet.objects.get().note == "kept note"
    assert set(FreeTag.objects.values_list("name", flat=True)) == {"kept"}


def test_a_refused_submit_shows_the_input_back(client, alice, cards):
    client.force_login(alice)
    r = post_tags(client, cards[0], "fine tag", new=("y" * 101, ""), note="my note")
    assert r.status_code == 422
    html = r.content.decode()
    assert 'data-tag="fine tag"' in html and "my note" in html


def test_a_name_of_exactly_100_and_a_description_of_500_are_fine(client, alice, cards):
    client.force_login(alice)
    r = post_tags(client, cards[0], ("n" * 100, "d" * 500))
    assert r.status_code == 200
    assert FreeTag.objects.get().name == "n" * 100


# --- the autocomplete ----------------------------------------------------------------------


def test_the_autocomplete_offers_my_own_tags_only_those_starting_with_the_text_first(
    client, alice, bob, cards
):
    client.force_login(bob)
    post_tags(client, cards[0], "a vague thing", "bob-vague")
    client.force_login(alice)
    post_tags(client, cards[0], "not vague", "vague goal", "scope creep")
    r = client.get(reverse("tag_search", args=["s1"]), {"new_tag": "vague"}, **HTMX)
    html = r.content.decode()
    assert r.status_code == 200
    assert html.index('data-name="vague goal"') < html.index('data-name="not vague"')
    assert "scope creep" not in html
    assert "bob-vague" not in html and "a vague thing" not in html


def test_the_autocomplete_of_an_empty_box_lists_my_tags(client, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], "b tag", "a tag")
    html = client.get(reverse("tag_search", args=["s1"]), {"q": ""}).content.decode()
    assert html.index("a tag") < html.index("b tag")


def test_the_autocomplete_is_for_members_only(client, charlie, cards):
    client.force_login(charlie)
    assert client.get(reverse("tag_search", args=["s1"]), {"q": "v"}).status_code == 404


# --- done: queue, progress, My cards, home page, API ------------------------------------------


def test_a_tagged_card_counts_as_done_everywhere(client, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], "vague goal")
    post_tags(client, cards[2], no_smell=True)
    # progress on the card
    html = client.get(study_url("card", cards[1])).content.decode()
    assert "2 of 3 labelled" in html
    # the queue resumes at the card not yet tagged
    assert client.get(study_url("queue")).url == study_url("card", cards[1])
    # My cards
    r = client.get(study_url("my_cards"), {"state": "labelled"})
    assert [t.pk for t in r.context["page"]] == [cards[0].pk, cards[2].pk]
    r = client.get(study_url("my_cards"), {"state": "todo"})
    assert [t.pk for t in r.context["page"]] == [cards[1].pk]
    # the study page and the home page
    assert client.get(study_url("study")).context["done"] == 2
    row = client.get(reverse("home")).context["rows"][0]
    assert (row["done"], row["total"]) == (2, 3)
    # the API's list of my cards
    body = token_client(alice).get("/api/studies/s1/cards/", {"done": "true"}).json()
    assert [c["id"] for c in body["results"]] == [cards[0].pk, cards[2].pk]


def test_the_last_card_tagged_leads_to_the_done_page(client, alice, cards):
    client.force_login(alice)
    for turn in cards:
        r = post_tags(client, turn, "t", htmx=False)
    assert r.url == study_url("queue")
    assert client.get(study_url("queue")).templates[0].name == "annotation/queue_done.html"


def test_a_card_tagged_and_then_labelled_at_the_freeze_counts_once(client, study, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], "vague goal")
    # the freeze maps the tag set to a round-1 label (another part builds it)
    Study.objects.filter(pk=study.pk).update(phase=Phase.CLOSED_SORT)
    label(cards[0], alice, "ambiguous_instruction")
    assert client.get(study_url("study")).context["done"] == 1
    assert client.get(reverse("home")).context["rows"][0]["done"] == 1


def test_the_api_refuses_labels_on_a_card_in_the_open_sort(alice, cards):
    r = token_client(alice).put(
        f"/api/studies/s1/cards/{cards[0].pk}/annotation/", {"labels": []}, format="json"
    )
    assert r.status_code == 409
    assert "open sort" in r.json()["detail"]
    assert not Annotation.objects.exists()


# --- the lead's switch -------------------------------------------------------------------------


def test_the_lead_switches_the_study_into_and_out_of_the_open_sort(client, study, lead, alice):
    make_group(study, "experts", [alice], kind=Kind.EXPERT)
    client.force_login(lead)
    page = client.get(reverse("lead_groups", args=["s1"])).content.decode()
    assert "Phase of the study" in page
    r = client.post(reverse("lead_study_phase", args=["s1"]), {"phase": "open_sort"}, follow=True)
    assert "The study is now in the open sort." in r.content.decode()
    assert Study.objects.get().phase == Phase.OPEN_SORT
    client.post(reverse("lead_study_phase", args=["s1"]), {"phase": "closed_sort"})
    assert Study.objects.get().phase == Phase.CLOSED_SORT


def test_going_into_the_open_sort_is_refused_once_the_group_has_labels(
    client, study, lead, alice, bob
):
    group = make_group(study, "experts", [alice, bob], kind=Kind.EXPERT)
    turn = make_conversation(study, "c1", 2, group=group).turns.first()
    label(turn, alice, "code_rollback")
    client.force_login(lead)
    r = client.post(reverse("lead_study_phase", args=["s1"]), {"phase": "open_sort"}, follow=True)
    assert (
        "Phase not changed: Group experts cannot open-sort: its annotators have given 1 round-1 label"
        in r.content.decode()
    )
    assert Study.objects.get().phase == Phase.CLOSED_SORT
    r = client.post(
        reverse("lead_group_phase", args=["s1", group.pk]), {"phase": "open_sort"}, **HTMX
    )
    assert r.status_code == 422
    assert "cannot open-sort" in r.content.decode()
    group.refresh_from_db()
    assert group.phase == ""


def test_leaving_the_open_sort_is_refused_once_tag_sets_exist(client, study, lead, alice, cards):
    client.force_login(alice)
    post_tags(client, cards[0], "vague goal")
    client.force_login(lead)
    r = client.post(reverse("lead_study_phase", args=["s1"]), {"phase": "closed_sort"}, follow=True)
    assert "cannot leave the open sort: its annotators have tagged 1 card" in r.content.decode()
    assert Study.objects.get().phase == Phase.OPEN_SORT
    group = study.groups.get()
    r = client.post(
        reverse("lead_group_phase", args=["s1", group.pk]), {"phase": "closed_sort"}, **HTMX
    )
    assert r.status_code == 422 and "cannot leave the open sort" in r.content.decode()


def test_a_group_switches_alone_and_the_study_switch_spares_groups_of_their_own(
    client, study, lead, alice, charlie
):
    tagged = open_sort_group(study, [alice], "experts", by_study=False)
    other = make_group(study, "students", [charlie])
    turn = make_conversation(study, "c1", 1, group=other).turns.get()
    label(turn, charlie, "code_rollback")
    client.force_login(lead)
    r = client.post(reverse("lead_group_phase", args=["s1", tagged.pk]), {"phase": ""}, **HTMX)
    assert r.status_code == 200 and "The study's (closed sort)" in r.content.decode()
    client.post(reverse("lead_group_phase", args=["s1", tagged.pk]), {"phase": "open_sort"}, **HTMX)
    # the study cannot open-sort as a whole (students have labels), the experts still do
    client.post(reverse("lead_study_phase", args=["s1"]), {"phase": "open_sort"})
    tagged.refresh_from_db()
    assert Study.objects.get().phase == Phase.CLOSED_SORT and tagged.open_sorting


def test_the_switch_is_for_leads_only(client, study, alice, cards):
    client.force_login(alice)
    assert (
        client.post(reverse("lead_study_phase", args=["s1"]), {"phase": "closed_sort"}).status_code
        == 403
    )
    group = study.groups.get()
    r = client.post(reverse("lead_group_phase", args=["s1", group.pk]), {"phase": "closed_sort"})
    assert r.status_code == 403
    assert Study.objects.get().phase == Phase.OPEN_SORT


def test_an_unknown_phase_is_refused_by_name(study, alice):
    with pytest.raises(tagging.PhaseRefused, match="Unknown phase 'sideways'"):
        tagging.set_study_phase(study, "sideways")


def test_create_study_takes_a_phase(db, capsys):
    call_command("create_study", "pilot", "--phase", "open_sort", "--no-lead")
    assert Study.objects.get(slug="pilot").phase == Phase.OPEN_SORT
    assert "in the open sort" in capsys.readouterr().out
    call_command("create_study", "later", "--no-lead")
    assert Study.objects.get(slug="later").phase == Phase.CLOSED_SORT


def test_a_lead_who_tags_sees_the_panel_too(client, study, alice):
    boss = make_user("boss")
    study.add_member(boss, Role.LEAD, Kind.EXPERT)
    cards = cards_of(study, open_sort_group(study, [alice, boss]))
    client.force_login(boss)
    assert "data-tags" in client.get(study_url("card", cards[0])).content.decode()
