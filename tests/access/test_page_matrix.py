"""Who gets what from the pages, their htmx partials and the downloads (issue 24), in the
access matrix's study (tests/access/world.py): anonymous, an annotator, an annotator of
another group, the moderator, a lead, a lead who annotates and a member of another study;
each page's status, and every answer's whole body (a download's file too) read for every
author's round-1 secrets: labels, note, evidence, time on the card, and the agreement
result counting them. The jobs' pages, partials and downloads, the report and its
downloads and time per card are in it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.access import world as matrix
from tests.factories import HTMX

pytestmark = pytest.mark.django_db

ROLES = matrix.ROLES


@pytest.fixture
def world(study, lead, alice, bob, media):
    return matrix.build(study, lead, alice, bob)


def _url(world, name: str, arg: str | None) -> str:
    t1, _, t3 = world["turns"]
    objects = {"t1": t1, "t3": t3, "u1": world["u1"], "v1": world["v1"], "c1": world["c1"]}
    objects |= {k: world[k] for k in ("agreement", "export", "lena_export", "times")}
    if arg is None:
        return reverse(name, args=["s1"])
    if arg in objects:
        return reverse(name, args=["s1", objects[arg].pk])
    return reverse(name, args=["s1", arg])


# (url name, its object, expected status for: anonymous, annotator, other_group, moderator,
# lead, lead_annotating, other_study), the same for the page and its htmx partial
PAGES = [
    ("study", None, 302, 200, 200, 200, 200, 200, 404),
    ("my_cards", None, 302, 200, 200, 200, 200, 200, 404),
    ("discuss_queue", None, 302, 200, 200, 200, 200, 200, 404),
    ("moderate_queue", None, 302, 403, 403, 200, 200, 200, 404),
    ("card", "t1", 302, 200, 404, 404, 404, 200, 404),
    ("card", "t3", 302, 200, 404, 404, 404, 200, 404),
    ("card", "u1", 302, 404, 200, 404, 404, 404, 404),
    ("card", "v1", 302, 404, 200, 404, 404, 200, 404),
    ("discussion", "t1", 302, 200, 404, 200, 200, 200, 404),
    ("discussion", "t3", 302, 403, 404, 200, 200, 403, 404),
    ("discussion", "u1", 302, 404, 200, 404, 200, 200, 404),
    ("card_timeline", "t3", 302, 403, 404, 200, 200, 403, 404),
    # the lead's pages: a 403 "Leads only" for the other members
    ("job_detail", "agreement", 302, 403, 403, 403, 200, 200, 404),
    ("job_detail", "export", 302, 403, 403, 403, 200, 200, 404),
    # the lead's export shows the others' labels on card 3: not lena's to have
    ("job_download", "export", 302, 403, 403, 403, 200, 403, 404),
    ("job_download", "lena_export", 302, 403, 403, 403, 200, 200, 404),
    ("lead_card_times", None, 302, 403, 403, 403, 200, 200, 404),
    # time per card's kept tables (everyone's times): their page for both leads, the result
    # withheld from lena (bob's time on card 3, which she labels blind); no file to download
    ("job_detail", "times", 302, 403, 403, 403, 200, 200, 404),
    ("job_download", "times", 302, 403, 403, 403, 404, 403, 404),
    ("lead_conversations", None, 302, 403, 403, 403, 200, 200, 404),
    ("lead_conversation", "c1", 302, 403, 403, 403, 200, 200, 404),
    ("lead_browse", None, 302, 403, 403, 403, 200, 200, 404),
    # the leads' and the moderators'; closed to lena while she labels card 3 blind
    ("report", None, 302, 403, 403, 200, 200, 403, 404),
    ("report_download", "json", 302, 403, 403, 200, 200, 403, 404),
    ("report_download", "csv", 302, 403, 403, 200, 200, 403, 404),
    ("report_download", "md", 302, 403, 403, 200, 200, 403, 404),
    # the methods section: it names the groups' judges to the leads only
    ("report_methods", None, 302, 403, 403, 200, 200, 403, 404),
    ("methods_download", "md", 302, 403, 403, 200, 200, 403, 404),
]
# the Jobs panel's list: a partial (without htmx the study page, a redirect)
JOB_LIST = ("job_list", None, 302, 403, 403, 403, 200, 200, 404)
# the machine judges' panel (issue 22), a partial of the report page: the leads', not while
# the agreement lock applies
JUDGE_RUNS = ("judge_runs", None, 302, 403, 403, 403, 200, 403, 404)
PARTIALS = (JOB_LIST, JUDGE_RUNS)


def _id(row) -> str:
    return f"{row[0]}[{row[1]}]" if row[1] else row[0]


@pytest.mark.parametrize("row", [*PAGES, *PARTIALS], ids=_id)
def test_each_role_gets_the_pages_its_role_gives_it(world, row):
    url, expected = _url(world, row[0], row[1]), dict(zip(ROLES, row[2:], strict=True))

    got = {role: matrix.page_client(world, role).get(url, **HTMX).status_code for role in ROLES}
    if row not in PARTIALS:
        plain = {role: matrix.page_client(world, role).get(url).status_code for role in ROLES}
        assert plain == expected, url

    assert got == expected, url


# what each role must find, of each secret it may see, in the pages' answers: the leads see
# the times (time per card); the author, their tags on the card
LABELS = {role: ("note", "evidence", "label") for role in ROLES}
LABELS |= {lead: ("note", "evidence", "label", "time") for lead in ("lead", "lead_annotating")}
LABELS["lead"] += ("name",)  # a machine judge's, on the report's Machine judges panel
SEEN_ON_THE_PAGES = {role: {"labels": LABELS[role], "tags": ("tag", "note")} for role in ROLES}


@pytest.mark.parametrize("role", ROLES)
def test_no_page_partial_or_download_carries_a_secret_the_role_may_not_see(world, role):
    client = matrix.page_client(world, role)
    answers = []
    for row in [*PAGES, *PARTIALS]:
        url = _url(world, row[0], row[1])
        for headers, tag in (({}, ""), (HTMX, " htmx")):
            answers.append((f"GET {url}{tag}", client.get(url, **headers), False))

    leaked, seen = matrix.findings(role, answers)

    assert leaked == []
    agreement = role in matrix.AGREEMENT_SEEN_BY
    matrix.assert_seen(role, seen, SEEN_ON_THE_PAGES[role], agreement=agreement)
