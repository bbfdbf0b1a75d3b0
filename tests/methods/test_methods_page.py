"""The report page's Methods tab and its downloads: the report's readers only, behind the
report's lock (a lead who annotates an open card on which others labelled gets the report's
refusal), a split check's results withheld from a reader the check study's lock applies to,
and every name escaped."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Conversation, Group, Role, Seat, Study
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db


def user(name: str):
    return get_user_model().objects.get(username=name)


def get(client, who, name: str, *args, slug: str = "m"):
    client.force_login(who)
    return client.get(reverse(name, args=[slug, *args]))


def test_a_lead_reads_each_step_with_its_numbers_and_downloads(client, built):
    response = get(client, user("ada"), "report_methods")

    assert response.status_code == 200
    body = response.content.decode()
    for title in ("Import", "Coding filter", "Splitting", "Second coding filter", "Split check",
                  "Sample", "Phases and teams", "Agreement", "Moderation"):  # fmt: skip
        assert f"<h2>{title}</h2>" in body
    assert 'data-table="methods-split-check"' in body
    assert "93.8%" in body  # the entry accuracy: 15 of 16 with a consensus
    assert "Smells &amp; more" in body
    for fmt in ("md", "tex", "json"):
        assert reverse("methods_download", args=["m", fmt]) in body


def test_the_agreement_report_links_its_methods_tab(client, built):
    body = get(client, user("ada"), "report").content.decode()

    assert f'href="{reverse("report_methods", args=["m"])}"' in body


def test_the_downloads_are_the_commands_outputs(client, built):
    ada = user("ada")

    md = get(client, ada, "methods_download", "md")
    tex = get(client, ada, "methods_download", "tex")
    data = get(client, ada, "methods_download", "json")

    assert md["Content-Type"].startswith("text/markdown")
    assert md["Content-Disposition"] == 'attachment; filename="m-methods.md"'
    assert md.content.decode().startswith("# Methods: Smells & more")
    assert "\\begin{tabular}" in tex.content.decode()
    steps = json.loads(data.content)["steps"]
    assert [s["step"] for s in steps][0] == "import" and len(steps) == 9
    assert get(client, ada, "methods_download", "pdf").status_code == 404


def test_a_moderator_reads_it_an_annotator_is_told_a_stranger_gets_a_404(client, built):
    assert get(client, user("mo"), "report_methods").status_code == 200
    refused = get(client, user("st1"), "report_methods")
    assert refused.status_code == 403
    stranger = make_user("stranger")
    assert get(client, stranger, "report_methods").status_code == 404
    assert get(client, stranger, "methods_download", "json").status_code == 404


def test_a_lead_who_annotates_an_open_card_others_labelled_gets_the_reports_refusal(
    client, study, alice
):
    lena = make_user("lena")
    study.add_member(lena, Role.LEAD)
    group = make_group(study, "A", [lena, alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    label(turn, alice, "code_rollback", note="alice-secret")

    page = get(client, lena, "report_methods", slug=study.slug)
    download = get(client, lena, "methods_download", "json", slug=study.slug)
    report = get(client, lena, "report", slug=study.slug)

    assert page.status_code == download.status_code == report.status_code == 403
    assert "still in round 1" in page.content.decode()
    assert "alice-secret" not in page.content.decode()
    label(turn, lena, "code_rollback")  # round 1 is over there
    assert get(client, lena, "report_methods", slug=study.slug).status_code == 200


def test_a_split_checks_results_are_withheld_from_a_lead_who_annotates_there(client, built):
    ada, check = user("ada"), Study.objects.get(slug="mcheck")
    group = Group.objects.create(study=check, name="late", kind="student")
    group.seat(ada, Seat.ANNOTATOR)
    other = make_user("cu3")
    group.seat(other, Seat.ANNOTATOR)
    extra = make_conversation(check, "extra", n_turns=1, group=group)
    label(extra.turns.get(), other, "correct", group=group)

    body = get(client, ada, "report_methods").content.decode()
    data = json.loads(get(client, ada, "methods_download", "json").content)

    assert "Its results are withheld from you" in body
    assert "93.8%" not in body
    (checked,) = next(s for s in data["steps"] if s["step"] == "split-check")["data"]["checks"]
    assert checked["withheld"] and checked.get("accuracy") is None
    assert get(client, user("mo"), "report_methods").content.decode().count("93.8%") >= 1
    assert Conversation.objects.filter(study=check).count() == 18


def test_names_are_text_on_the_page(client, study, alice, bob):
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    make_group(study, "<img src=x onerror=alert(1)>", [alice, bob])

    body = get(client, lead, "report_methods", slug=study.slug).content.decode()

    assert "<img src=x" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
