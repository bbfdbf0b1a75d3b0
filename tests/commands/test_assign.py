"""assign SLUG --group NAME (--n N --seed S | --all | --ids FILE) [--exclude-assigned]: the
lead's "Assign at random" from the command line (issue 20, point 4), the same draw."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Assignment, Conversation, SetAside
from tests.factories import make_conversation, make_group

pytestmark = pytest.mark.django_db


def assign(*args, verbosity: int = 1) -> str:
    out = StringIO()
    call_command("assign", "s1", *args, stdout=out, verbosity=verbosity)
    return out.getvalue()


def conversations(study, n: int) -> list[Conversation]:
    return [make_conversation(study, f"c{i:02d}", n_turns=2) for i in range(n)]


def ids_of(group) -> set[str]:
    return set(group.conversations.values_list("external_id", flat=True))


def page_draw(client, study, group, n: int, seed: int) -> set[str]:
    """What the lead's "Assign at random" assigns to `group`, taken back afterwards."""
    client.post(
        reverse("lead_assign", args=[study.slug]),
        {"how": "count", "group": group.pk, "count": n, "seed": seed},
    )
    drawn = ids_of(group)
    Assignment.objects.filter(group=group).delete()
    return drawn


def set_aside(study, *external_ids: str, why=SetAside.SAMPLE) -> None:
    Conversation.objects.filter(study=study, external_id__in=external_ids).update(set_aside=why)


def test_the_command_draws_what_the_page_draws_for_the_same_seed(client, study, lead):
    conversations(study, 30)
    g0, g1 = make_group(study, "G0"), make_group(study, "G1")
    Conversation.objects.filter(external_id__in=["c03", "c11", "c17"]).assign(g0)
    client.force_login(lead)
    by_page = page_draw(client, study, g1, 7, seed=11)
    assert len(by_page) == 7 and not by_page & {"c03", "c11", "c17"}
    out = assign("--group", "G1", "--n", "7", "--seed", "11", "--exclude-assigned")
    assert ids_of(g1) == by_page
    assert "Assigned 7 conversations (14 turns) to G1 at random with seed 11." in out
    for external_id in by_page:  # it prints what it assigned
        assert f"  {external_id}\n" in out


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    taken=st.sets(st.integers(0, 11), max_size=5),
    aside=st.sets(st.integers(0, 11), max_size=4),
    n=st.integers(1, 3),
    seed=st.integers(0, 10_000),
)
def test_for_any_seed_and_any_assigned_or_set_aside_the_draws_agree(
    client, study, lead, taken, aside, n, seed
):
    client.force_login(lead)
    with transaction.atomic():
        conversations(study, 12)
        g0, g1 = make_group(study, "G0"), make_group(study, "G1")
        Conversation.objects.filter(external_id__in=[f"c{i:02d}" for i in taken]).assign(g0)
        set_aside(study, *[f"c{i:02d}" for i in aside - taken])
        free = 12 - len(taken | aside)
        if n <= free:
            by_page = page_draw(client, study, g1, n, seed)
            assign("--group", "G1", "--n", str(n), "--seed", str(seed), "--exclude-assigned")
            assert ids_of(g1) == by_page
            assert not ids_of(g1) & {f"c{i:02d}" for i in taken | aside}
        else:
            with pytest.raises(CommandError, match=f"only {free} are unassigned"):
                assign("--group", "G1", "--n", str(n), "--seed", str(seed), "--exclude-assigned")
            assert not ids_of(g1)
        transaction.set_rollback(True)


def test_without_exclude_assigned_it_draws_from_the_whole_set_and_says_what_is_shared(study):
    conversations(study, 4)
    g0, g1 = make_group(study, "G0"), make_group(study, "G1")
    Conversation.objects.filter(study=study).assign(g0)
    out = assign("--group", "G1", "--n", "4", "--seed", "3")
    assert ids_of(g1) == ids_of(g0) == {"c00", "c01", "c02", "c03"}
    assert "4 of them are assigned to other groups too" in out


def test_exclude_assigned_refuses_more_than_are_unassigned(study):
    conversations(study, 3)
    g0, g1 = make_group(study, "G0"), make_group(study, "G1")
    Conversation.objects.filter(external_id="c00").assign(g0)
    with pytest.raises(CommandError, match="Asked for 3 conversations but only 2 are unassigned"):
        assign("--group", "G1", "--n", "3", "--seed", "1", "--exclude-assigned")
    assert not ids_of(g1)


def test_set_aside_conversations_are_never_drawn(study):
    conversations(study, 6)
    group = make_group(study, "G1")
    set_aside(study, "c01", "c02")
    set_aside(study, "c04", why=SetAside.SPLIT)
    assign("--group", "G1", "--all")
    assert ids_of(group) == {"c00", "c03", "c05"}
    with pytest.raises(CommandError, match="only 0 are in the set and not yet in G1"):
        assign("--group", "G1", "--n", "1", "--seed", "1")


def test_all_with_exclude_assigned_takes_what_no_group_has(study):
    conversations(study, 5)
    g0, g1 = make_group(study, "G0"), make_group(study, "G1")
    Conversation.objects.filter(external_id__in=["c00", "c01"]).assign(g0)
    out = assign("--group", "G1", "--all", "--exclude-assigned")
    assert ids_of(g1) == {"c02", "c03", "c04"}
    assert "Assigned 3 conversations (6 turns) to G1: every conversation of the study's set" in out


def test_several_groups_share_the_drawn_conversations(study):
    conversations(study, 10)
    g1, g2 = make_group(study, "G1"), make_group(study, "G2")
    out = assign("--group", "G1", "--group", "G2", "--n", "4", "--seed", "5")
    assert len(ids_of(g1)) == 4 and ids_of(g1) == ids_of(g2)
    assert "to G1 and G2 at random with seed 5" in out


def test_quiet_prints_only_the_summary(study):
    conversations(study, 3)
    make_group(study, "G1")
    out = assign("--group", "G1", "--all", verbosity=0)
    assert out.strip().splitlines() == [
        "Assigned 3 conversations (6 turns) to G1: every conversation of the study's set "
        "not yet in G1."
    ]


def test_a_draw_that_would_seat_someone_twice_is_refused_whole(study, alice):
    conversations(study, 3)
    g0 = make_group(study, "G0", [alice])
    g1 = make_group(study, "G1", [alice])
    Conversation.objects.filter(external_id="c00").assign(g0)
    with pytest.raises(CommandError, match="Nothing assigned: groups 'G1' and 'G0'"):
        assign("--group", "G1", "--all")
    assert not ids_of(g1)


# -- --ids FILE ---------------------------------------------------------------------------


def id_file(tmp_path, text: str | bytes):
    path = tmp_path / "ids.txt"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return str(path)


def test_it_assigns_the_listed_conversations(study, tmp_path):
    conversations(study, 5)
    group = make_group(study, "G1")
    out = assign("--group", "G1", "--ids", id_file(tmp_path, "\ufeffc01\n\n  c03  \nc04"))
    assert ids_of(group) == {"c01", "c03", "c04"}
    assert "Assigned 3 listed conversations (6 turns) to G1" in out


def test_unknown_ids_are_errors_naming_file_and_line_and_nothing_is_assigned(study, tmp_path):
    conversations(study, 3)
    group = make_group(study, "G1")
    path = id_file(tmp_path, "c00\nnope\nc01\nc00\n")
    with pytest.raises(CommandError) as refused:
        assign("--group", "G1", "--ids", path)
    message = str(refused.value)
    assert "2 bad lines in" in message
    assert f"{path}:2: no conversation 'nope' in study s1" in message
    assert f"{path}:4: 'c00' is on line 1 too" in message
    assert not ids_of(group)


def test_a_listed_set_aside_or_ambiguous_id_is_an_error(study, tmp_path):
    conversations(study, 3)
    make_conversation(study, "c02")  # the dataset repeats an id (WildChat does)
    group = make_group(study, "G1")
    set_aside(study, "c01", why=SetAside.SPLIT)
    path = id_file(tmp_path, "c00\nc01\nc02\n")
    with pytest.raises(CommandError) as refused:
        assign("--group", "G1", "--ids", path)
    message = str(refused.value)
    assert f"{path}:2: conversation 'c01' is set aside (split into single-topic" in message
    assert f"{path}:3: id 'c02' is ambiguous: 2 conversations have it" in message
    assert "name one by its key: c02~1 (key c02) or c02~2" in message
    assert not ids_of(group)


def test_a_key_names_one_of_two_conversations_with_one_id(study, tmp_path):
    """WildChat repeats ids (issue 20, defect 1): the second c02 is c02~2, the first c02~1
    (its key is the plain c02, which names both)."""
    conversations(study, 3)
    twin = make_conversation(study, "c02")
    group = make_group(study, "G1")
    out = assign("--group", "G1", "--ids", id_file(tmp_path, "c02~2\nc01\n"))
    assert set(group.conversations.values_list("pk", flat=True)) == {
        twin.pk,
        Conversation.objects.get(key="c01").pk,
    }
    assert "  c02~2\n" in out  # it prints the keys it assigned
    assign("--group", "G1", "--ids", id_file(tmp_path, "c02~1\n"))
    assert group.conversations.filter(key="c02").exists()


def test_listed_ids_that_have_a_group_are_shared_unless_excluded(study, tmp_path):
    conversations(study, 3)
    g0, g1, g2 = make_group(study, "G0"), make_group(study, "G1"), make_group(study, "G2")
    Conversation.objects.filter(external_id="c00").assign(g0)
    path = id_file(tmp_path, "c00\nc01\n")
    out = assign("--group", "G1", "--ids", path, "--exclude-assigned")
    assert ids_of(g1) == {"c01"} and ids_of(g0) == {"c00"}
    assert "1 already had a group and stayed in it" in out
    out = assign("--group", "G2", "--ids", path)
    assert ids_of(g2) == {"c00", "c01"}
    assert "2 of them are assigned to other groups too" in out


def test_a_bad_file_is_named(study, tmp_path):
    conversations(study, 2)
    make_group(study, "G1")
    with pytest.raises(CommandError, match="cannot read .*missing.txt"):
        assign("--group", "G1", "--ids", str(tmp_path / "missing.txt"))
    with pytest.raises(CommandError, match=r"ids.txt:2: not UTF-8 text \(byte 3\)"):
        assign("--group", "G1", "--ids", id_file(tmp_path, b"c00\nc0\xff\n"))
    with pytest.raises(CommandError, match=r"ids.txt:2: longer than 272 characters"):
        assign("--group", "G1", "--ids", id_file(tmp_path, "c00\n" + "x" * 5000 + "\nc01\n"))
    with pytest.raises(CommandError, match="lists no conversation id"):
        assign("--group", "G1", "--ids", id_file(tmp_path, "\n\n"))


def test_a_huge_file_is_not_read_past_the_study_size(study, tmp_path):
    conversations(study, 2)
    make_group(study, "G1")
    path = id_file(tmp_path, "".join(f"x{i}\n" for i in range(100_000)))
    with pytest.raises(
        CommandError, match=r"more ids than study s1 has conversations \(2\).*line 1003"
    ):
        assign("--group", "G1", "--ids", path)


# -- the options --------------------------------------------------------------------------


def test_n_needs_a_seed_and_a_seed_needs_n(study):
    conversations(study, 2)
    make_group(study, "G1")
    with pytest.raises(CommandError, match="--n needs --seed S"):
        assign("--group", "G1", "--n", "1")
    with pytest.raises(CommandError, match="--seed goes with --n"):
        assign("--group", "G1", "--all", "--seed", "3")
    with pytest.raises(CommandError, match="--n must be at least 1"):
        assign("--group", "G1", "--n", "0", "--seed", "3")


def test_it_needs_one_way_and_a_known_group(study):
    make_group(study, "G1")
    with pytest.raises(CommandError, match="one of the arguments --n --all --ids is required"):
        assign("--group", "G1")
    with pytest.raises(CommandError, match="not allowed with argument"):
        assign("--group", "G1", "--all", "--n", "2")
    with pytest.raises(CommandError, match="unknown group 'G9' in study s1 .groups: G1"):
        assign("--group", "G9", "--all")
