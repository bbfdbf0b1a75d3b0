from __future__ import annotations

from rest_framework.test import APIClient

from annotation.models import Kind, Role
from tests.factories import make_study, make_user, token_client


def test_it_requires_authentication(study):
    response = APIClient().get("/api/studies/")

    assert response.status_code == 401


def test_it_rejects_a_wrong_token(study):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    assert client.get("/api/studies/").status_code == 401


def test_it_lists_the_studies_i_am_a_member_of_with_my_role(study, alice, lead):
    study.add_member(alice, Role.ANNOTATOR)
    other = make_study("s2", taxonomy="agent-misalignment")
    other.add_member(alice, Role.MODERATOR, Kind.EXPERT)
    make_study("s3")

    response = token_client(alice).get("/api/studies/")

    assert response.status_code == 200
    assert response.json() == [
        {
            "slug": "s1",
            "name": "S1",
            "role": "annotator",
            "phase": "closed_sort",
            "taxonomy": "interaction-smells",
            "taxonomy_version": 1,
        },
        {
            "slug": "s2",
            "name": "S2",
            "role": "moderator",
            "phase": "closed_sort",
            "taxonomy": "agent-misalignment",
            "taxonomy_version": 2,  # the preset's version 2 (version 1: outcome, resolution)
        },
    ]
    assert [s["role"] for s in token_client(lead).get("/api/studies/").json()] == ["lead"]


def test_it_lists_no_study_for_charlie(study, alice, charlie):
    study.add_member(alice)

    response = token_client(charlie).get("/api/studies/")

    assert response.status_code == 200
    assert response.json() == []


def test_it_returns_the_taxonomy_of_the_study(study, alice):
    study.add_member(alice)

    response = token_client(alice).get("/api/studies/s1/taxonomy/")

    assert response.status_code == 200
    data = response.json()
    assert (data["taxonomy"], data["version"]) == ("interaction-smells", 1)
    axis = data["axes"][0]
    assert (axis["code"], axis["multi_select"]) == ("smell", True)
    first_type = axis["categories"][0]["types"][0]
    assert first_type["code"] == "ambiguous_instruction"
    assert first_type["hotkey"] == "1"
    assert first_type["definition"].startswith("The user's instruction admits")
    codes = [t["code"] for c in axis["categories"] for t in c["types"]]
    assert codes == list(study.taxonomy_version.types_by_code())
    assert axis["when"] == {}


def test_the_taxonomy_gives_each_axis_its_condition(alice):
    other = make_study("s2", taxonomy="agent-misalignment")
    other.add_member(alice)
    axes = {
        a["code"]: a for a in token_client(alice).get("/api/studies/s2/taxonomy/").json()["axes"]
    }
    assert axes["damage_locus"]["when"] == {"damage_severity": ["DS2", "DS3"]}
    assert axes["resolver"]["when"] == {"resolution_status": ["visible"]}
    assert axes["damage_severity"]["when"] == {}


def test_it_hides_a_study_from_charlie(study, alice, charlie):
    # Charlie should have no access to Alice's study, not even learn that it exists
    study.add_member(alice)
    make_user("charlie")

    response = token_client(charlie).get("/api/studies/s1/taxonomy/")

    assert response.status_code == 404
    assert token_client(charlie).get("/api/studies/nope/taxonomy/").status_code == 404
