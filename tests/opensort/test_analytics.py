"""The open sort's analytics (issue 11, point 2): tag co-occurrence and card similarity
checked against a naive computation over random data, the clustering against scipy called
directly, the dendrogram's SVG parsed, the CSV downloads neutralised against formula
injection, and who may see them (annotation/opensort/access.may_see_board)."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

from annotation.csv_cells import neutralise
from annotation.models import FreeTag, Group, Kind, Phase, Role, TagSet
from annotation.opensort.access import may_see_board, open_sort_cards_left
from annotation.opensort.analytics import (
    MAX_SHOWN_CARDS,
    Similarity,
    analyse,
    board_from_rows,
    cluster,
    cooccurrence,
    load_board,
    matrix_csv,
    resolve_roots,
    similarity,
)
from annotation.opensort.dendrogram import dendrogram_svg
from tests.factories import HTMX, make_conversation, make_study, make_user
from tests.opensort.helpers import HOSTILE, make_open_sort

SVG = "{http://www.w3.org/2000/svg}"


# -- naive references --------------------------------------------------------------------


def naive_cooccurrence(uses: list[tuple[int, int]], tags: list[int]) -> dict:
    on_card: dict[int, set[int]] = {}
    for card, tag in uses:
        on_card.setdefault(card, set()).add(tag)
    return {
        (a, b): sum(1 for used in on_card.values() if a in used and b in used)
        for a in tags
        for b in tags
    }


def naive_similarity(sorted_: set, placed: set, cards: list[int]) -> tuple[dict, dict]:
    """(same, both) per pair of cards, one expert at a time."""
    annotators = {a for _, a in sorted_} | {a for _, a, _ in placed}
    sorted_ = sorted_ | {(c, a) for c, a, _ in placed}
    same, both = {}, {}
    for i in cards:
        for j in cards:
            same[i, j] = both[i, j] = 0
            for e in annotators:
                if (i, e) in sorted_ and (j, e) in sorted_:
                    both[i, j] += 1
                    ti = {t for c, a, t in placed if c == i and a == e}
                    tj = {t for c, a, t in placed if c == j and a == e}
                    same[i, j] += bool(ti & tj)
    return same, both


# -- co-occurrence and similarity against the naive computation ----------------------------

uses_st = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 5)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(uses=uses_st, extra_tags=st.lists(st.integers(0, 8), max_size=3))
def test_the_cooccurrence_matrix_counts_the_cards_on_which_both_tags_were_used(uses, extra_tags):
    tags = sorted({t for _, t in uses} | set(extra_tags))
    got = cooccurrence(pd.DataFrame(uses, columns=["card", "tag"], dtype="int64"), tags)
    want = naive_cooccurrence(uses, tags)
    assert list(got.index) == tags and list(got.columns) == tags
    for (a, b), n in want.items():
        assert got.loc[a, b] == n, (a, b)


sorted_st = st.sets(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=28)
placed_st = st.sets(st.tuples(st.integers(0, 6), st.integers(0, 3), st.integers(0, 3)), max_size=40)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(sorted_=sorted_st, placed=placed_st)
def test_the_similarity_counts_experts_who_put_both_cards_under_one_type(sorted_, placed):
    cards = sorted({c for c, _ in sorted_} | {c for c, _, _ in placed})
    sim = similarity(
        pd.DataFrame(sorted(sorted_), columns=["card", "annotator"], dtype="int64"),
        pd.DataFrame(sorted(placed), columns=["card", "annotator", "type"], dtype="int64"),
        cards,
    )
    same, both = naive_similarity(sorted_, placed, cards)
    for x, i in enumerate(cards):
        for y, j in enumerate(cards):
            assert sim.same[x, y] == same[i, j], (i, j)
            assert sim.both[x, y] == both[i, j], (i, j)
            if both[i, j]:
                assert sim.share[x, y] == pytest.approx(same[i, j] / both[i, j])
            else:
                assert np.isnan(sim.share[x, y])


def test_an_expert_who_sorted_a_card_with_no_type_counts_among_those_who_sorted_both():
    # alice (1) put cards 10 and 11 under type 5; bob (2) tagged card 11 with no type
    sorted_ = pd.DataFrame([(10, 1), (11, 1), (10, 2), (11, 2)], columns=["card", "annotator"])
    placed = pd.DataFrame(
        [(10, 1, 5), (11, 1, 5), (10, 2, 5)], columns=["card", "annotator", "type"]
    )
    sim = similarity(sorted_, placed, [10, 11])
    assert sim.same[0, 1] == 1 and sim.both[0, 1] == 2
    assert sim.share[0, 1] == 0.5


# -- the board's tags: a merged tag counts as its target ---------------------------------


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 12), st.none() | st.integers(0, 14), max_size=12))
def test_every_tag_resolves_to_the_end_of_its_merge_chain(merged_into):
    roots = resolve_roots(merged_into)
    assert set(roots) == set(merged_into)
    for tag, root in roots.items():
        # a root is not merged into a tag of the study, or sits on a cycle with the same root
        assert merged_into.get(root) not in merged_into or roots[merged_into[root]] == root
        target = merged_into[tag]
        if target in merged_into:
            assert roots[target] == root  # a tag counts as what its target counts as
        else:
            assert root == tag  # not merged (or into no tag of the study): itself


def test_a_merged_tag_counts_as_its_target_and_takes_its_type():
    # tags: 1 "vague" (alice) merged into 2 "unclear" (bob), under type 7; 3 "rollback" alone
    tag_rows = [(1, "vague", "alice", 2, None), (2, "unclear", "bob", None, 7),
                (3, "rollback", "alice", None, None)]  # fmt: skip
    use_rows = [(100, 1, 1), (101, 2, 2), (100, 2, 2), (100, 1, 3)]
    board = board_from_rows(
        tag_rows, [(100, 1), (101, 2), (100, 2)], use_rows, {100: "c1#1", 101: "c1#2"}, {7: "T"}
    )
    assert board.tags == [2, 3]  # "vague" is gone: it counts as "unclear"
    result = analyse(board)
    assert result.cooc.loc[2, 2] == 2 and result.cooc.loc[2, 3] == 1
    placed = set(board.placed.itertuples(index=False, name=None))
    assert placed == {(100, 1, 7), (100, 2, 7), (101, 2, 7)}


def test_two_tags_of_one_name_are_told_apart_by_their_authors():
    tag_rows = [(1, "vague", "alice", None, None), (2, "vague", "bob", None, None)]
    board = board_from_rows(tag_rows, [(100, 1), (100, 2)], [(100, 1, 1), (100, 2, 2)],
                            {100: "c1#1"}, {})  # fmt: skip
    assert sorted(board.tag_labels()) == ["vague (alice)", "vague (bob)"]


def test_a_big_study_shows_the_top_of_the_matrix_and_the_csv_holds_every_card():
    # 90 cards, two experts: both put cards 2k and 2k+1 under tag k, of type k (45 types)
    n = 90
    tag_rows = [(t, f"tag{t}", "alice", None, t + 1) for t in range(45)]
    sets = [(c, a) for c in range(n) for a in (1, 2)]
    uses = [(c, a, c // 2) for c, a in sets]
    board = board_from_rows(tag_rows, sets, uses, {c: f"c{c}#1" for c in range(n)}, {})
    result = analyse(board)
    table = result.sim_table()
    assert table["cut"] and len(table["labels"]) == MAX_SHOWN_CARDS == len(table["rows"])
    # similar cards side by side: each card sits next to its twin in dendrogram order
    order = result.order
    for k in range(0, n, 2):
        assert abs(order.index(k) - order.index(k + 1)) == 1
    assert result.sim_pairs(limit=3)[0][2:] == (2, 2)  # two experts of two
    rows = list(csv.reader(io.StringIO(result.similarity_csv("count"))))
    assert len(rows) == n + 1 and all(len(r) == n + 1 for r in rows)
    assert result.cooc_table(limit=5)["cut"] and len(result.cooc_table(limit=5)["labels"]) == 5


# -- clustering and the dendrogram ---------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(sorted_=sorted_st, placed=placed_st)
def test_the_clustering_is_scipys_average_linkage_on_one_minus_the_share(sorted_, placed):
    cards = sorted({c for c, _ in sorted_} | {c for c, _, _ in placed})
    sim = similarity(
        pd.DataFrame(sorted(sorted_), columns=["card", "annotator"], dtype="int64"),
        pd.DataFrame(sorted(placed), columns=["card", "annotator", "type"], dtype="int64"),
        cards,
    )
    if len(cards) < 2:
        assert cluster(sim) is None
        return
    same, both = naive_similarity(sorted_, placed, cards)
    d = np.array(
        [[0.0 if i == j else (1 - same[i, j] / both[i, j] if both[i, j] else 1.0) for j in cards]
         for i in cards]
    )  # fmt: skip
    want = linkage(squareform(d), method="average")
    np.testing.assert_allclose(cluster(sim), want)


def _similarity(n: int, seed: int = 0) -> Similarity:
    rng = np.random.default_rng(seed)
    both = np.full((n, n), 3)
    same = rng.integers(0, 4, size=(n, n))
    same = np.triu(same) + np.triu(same, 1).T
    np.fill_diagonal(same, 3)
    return Similarity(list(range(n)), same, both)


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed, or this raises
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img" and root.get("aria-label")
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}desc") is not None
    return root


def _leaves(root: ET.Element) -> list[str]:
    return [t.find(f"{SVG}title").text for t in root.iter(f"{SVG}text") if t.get("class") == "leaf"]


def test_the_dendrogram_is_well_formed_svg_with_one_escaped_label_per_card():
    labels = [f"conv-{i}#{i + 1}" for i in range(11)] + [HOSTILE]
    svg = dendrogram_svg(cluster(_similarity(12)), labels)
    assert "<script>" not in svg
    root = _parse(svg)
    assert sorted(_leaves(root)) == sorted(labels)  # the hostile text comes back intact
    assert len(list(root.iter(f"{SVG}polyline"))) == 11  # one link per merge


def test_a_big_tree_is_cut_to_its_last_merges_and_says_so():
    n = 40
    svg = dendrogram_svg(
        cluster(_similarity(n, seed=3)), [f"c{i}#1" for i in range(n)], max_leaves=10
    )
    root = _parse(svg)
    leaves = _leaves(root)
    assert len(leaves) == 10
    assert "40 cards" in root.find(f"{SVG}desc").text
    # each leaf is a card or a cluster "(k)"; together they hold every card
    sizes = [int(s[1:-1]) if s.startswith("(") else 1 for s in leaves]
    assert sum(sizes) == n


# -- CSV -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_a_cell_a_spreadsheet_would_run_gets_an_apostrophe(text):
    assert neutralise(text) == "'" + text
    rows = list(
        csv.reader(io.StringIO(matrix_csv("tag", [text, "plain"], np.array([[1, 0], [0, 2]]))))
    )
    assert rows[0] == ["tag", "'" + text, "plain"]
    assert rows[1] == ["'" + text, "1", "0"]


# -- the study's data through the pages --------------------------------------------------


@pytest.fixture
def open_sort(db):
    return make_open_sort()


def _urls(slug: str = "s1") -> list[str]:
    return [reverse("board_analytics", args=[slug])] + [
        reverse("board_analytics_csv", args=[slug, m])
        for m in ("cooccurrence", "similarity", "similarity-share")
    ]


@pytest.mark.django_db
def test_the_loader_reads_the_board_in_five_queries(open_sort, django_assert_num_queries):
    with django_assert_num_queries(5):
        board = load_board(open_sort["study"])
    unclear, vague, cmd = open_sort["tags"]
    # ed sorted c2#1 (with no tag) and has c2#2 left
    assert board.card_labels() == ["c1#1", "c1#2", "c1#3", "c2#1"]
    assert set(board.tags) == {unclear.pk, cmd.pk}  # vague counts as unclear
    result = analyse(board)
    assert result.cooc.loc[unclear.pk, unclear.pk] == 3  # every card, by someone
    assert result.cooc.loc[unclear.pk, cmd.pk] == 1
    # c1#1 and c1#2: alice put both under Ambiguous, bob only the first: 1 of 2
    assert (result.sim.same[0, 1], result.sim.both[0, 1]) == (1, 2)
    # c1#1 and c1#3: bob did, alice did not: 1 of 2; c1#2 and c1#3: nobody
    assert (result.sim.same[0, 2], result.sim.same[1, 2]) == (1, 0)


@pytest.mark.django_db
def test_the_lead_sees_the_analytics_partial(client, open_sort):
    client.force_login(open_sort["lena"])
    r = client.get(_urls()[0], **HTMX)
    assert r.status_code == 200
    html = r.content.decode()
    assert "<html" not in html and 'id="board-analytics"' in html
    assert "Tag co-occurrence" in html and "Card similarity" in html
    assert 'role="img"' in html and "c1#3" in html
    page = client.get(_urls()[0])  # without htmx: the page around it
    assert page.status_code == 200 and "<html" in page.content.decode()


@pytest.mark.django_db
def test_an_expert_who_has_tagged_all_their_cards_sees_them(client, open_sort):
    client.force_login(open_sort["alice"])
    for url in _urls():
        assert client.get(url).status_code == 200, url


@pytest.mark.django_db
def test_an_expert_with_open_sort_cards_left_is_refused_with_the_reason(client, open_sort):
    ed = open_sort["ed"]
    assert open_sort_cards_left(open_sort["study"], ed) == 1
    client.force_login(ed)
    for url in _urls():
        r = client.get(url, **HTMX)
        assert r.status_code == 403, url
        body = r.content.decode()
        assert "You still have 1 card to tag in the open sort" in body
        assert "unclear" not in body and "c1#1" not in body


@pytest.mark.django_db
def test_a_lead_who_annotates_with_cards_left_is_refused_too(client, open_sort):
    lena, study = open_sort["lena"], open_sort["study"]
    open_sort["group"].annotators.add(lena)  # lena joins group E: 3 cards to tag
    allowed, reason = may_see_board(study, lena)
    assert not allowed and "3 cards to tag" in reason
    client.force_login(lena)
    assert client.get(_urls()[0]).status_code == 403


@pytest.mark.django_db
def test_a_student_annotator_is_refused(client, open_sort):
    client.force_login(open_sort["sam"])
    for url in _urls():
        r = client.get(url)
        assert r.status_code == 403, url
        assert "Leads and experts only" in r.content.decode()


@pytest.mark.django_db
def test_a_non_member_gets_the_404_of_a_study_that_does_not_exist(client, open_sort):
    client.force_login(make_user("mallory"))
    for url in _urls():
        assert client.get(url).status_code == 404, url


@pytest.mark.django_db
def test_a_closed_sort_group_leaves_its_expert_nothing_to_tag(open_sort):
    study, ed = open_sort["study"], open_sort["ed"]
    ed.annotation_groups.update(phase=Phase.CLOSED_SORT)
    assert may_see_board(study, ed) == (True, "")


@pytest.mark.django_db
def test_the_csv_downloads_hold_every_card_and_neutralise_tag_names(client, open_sort):
    client.force_login(open_sort["lena"])
    cooc, count, share = (client.get(u) for u in _urls()[1:])
    assert cooc["Content-Type"].startswith("text/csv")
    assert 'filename="s1-cooccurrence.csv"' in cooc["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(cooc.content.decode())))
    assert rows[0] == ["tag", "unclear", "'=cmd()"]
    assert rows[2] == ["'=cmd()", "1", "1"]
    rows = list(csv.reader(io.StringIO(count.content.decode())))
    assert rows == [["card", "c1#1", "c1#2", "c1#3", "c2#1"], ["c1#1", "2", "1", "1", "0"],
                    ["c1#2", "1", "1", "0", "0"], ["c1#3", "1", "0", "1", "0"],
                    ["c2#1", "0", "0", "0", "0"]]  # fmt: skip
    rows = list(csv.reader(io.StringIO(share.content.decode())))
    # no expert sorted both c1#1 and c2#1: no share
    assert rows[1] == ["c1#1", "1.0", "0.5", "0.5", ""]
    assert rows[2] == ["c1#2", "0.5", "0.5", "0.0", ""]
    assert rows[4] == ["c2#1", "", "", "", "0.0"]


@pytest.mark.django_db
def test_an_unknown_matrix_is_a_404(client, open_sort):
    client.force_login(open_sort["lena"])
    assert client.get(reverse("board_analytics_csv", args=["s1", "nope"])).status_code == 404


@pytest.mark.django_db
def test_hostile_names_are_escaped_on_the_page(client, open_sort):
    study, alice = open_sort["study"], open_sort["alice"]
    tag = FreeTag.objects.create(study=study, author=alice, name=HOSTILE[:100])
    TagSet.objects.get(turn=open_sort["turns"][2], annotator=alice).tags.add(tag)
    client.force_login(open_sort["lena"])
    html = client.get(_urls()[0], **HTMX).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html


# -- the access rule over its paths (hypothesis) ---------------------------------------------

ROLES = ["lead", "moderator", "annotator", "superuser", "none"]


@st.composite
def seats(draw):
    role = draw(st.sampled_from(ROLES))
    member = role not in ("superuser", "none")
    n_cards = draw(st.integers(1, 3))
    return {
        "role": role,
        "kind": draw(st.sampled_from([Kind.EXPERT, Kind.STUDENT])),
        "study_phase": draw(st.sampled_from([Phase.OPEN_SORT, Phase.CLOSED_SORT])),
        "group_phase": draw(st.sampled_from(["", Phase.OPEN_SORT, Phase.CLOSED_SORT])),
        # a group's annotators are members of the study
        "in_group": member and draw(st.booleans()),
        "n_cards": n_cards,
        "n_tagged": draw(st.integers(0, n_cards)),
    }


def naive_may_see_board(case: dict) -> bool:
    expert = case["role"] in ("lead", "superuser") or (
        case["role"] in ("moderator", "annotator") and case["kind"] == Kind.EXPERT
    )
    open_sorting = case["group_phase"] == Phase.OPEN_SORT or (
        case["group_phase"] == "" and case["study_phase"] == Phase.OPEN_SORT
    )
    left = case["in_group"] and open_sorting and case["n_tagged"] < case["n_cards"]
    return expert and not left


@pytest.mark.django_db
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=seats())
def test_the_board_opens_to_leads_and_experts_with_no_open_sort_card_left(case):
    # one savepoint per example, rolled back: each example starts from the empty database
    with transaction.atomic():
        study = make_study("p1")
        study.phase = case["study_phase"]
        study.save()
        user = make_user("u")
        if case["role"] == "superuser":
            user.is_superuser = True
            user.save()
        elif case["role"] != "none":
            study.add_member(user, Role(case["role"]), case["kind"])
        group = Group.objects.create(study=study, name="G", phase=case["group_phase"])
        other = make_user("o")
        group.annotators.add(other)
        if case["in_group"]:
            group.annotators.add(user)
        turns = list(
            make_conversation(study, "c", n_turns=case["n_cards"], group=group).turns.all()
        )
        for turn in turns[: case["n_tagged"]]:
            TagSet.objects.create(turn=turn, group=group, annotator=user)
        for turn in turns:  # another annotator's tags count for nothing
            TagSet.objects.create(turn=turn, group=group, annotator=other)
        allowed, reason = may_see_board(study, user)
        assert allowed == naive_may_see_board(case), case
        assert (reason == "") == allowed
        transaction.set_rollback(True)
