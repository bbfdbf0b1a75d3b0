"""The lead finds conversations by text, source, model, language, group, card state and
number of turns; the filters combine, and the choices are the values present in the study."""

from __future__ import annotations

import pytest

from annotation.models import CardState, CardStatus, Conversation, Job, JobKind, JobStatus
from tests.factories import label

from .helpers import browse_url, listed, make_browsable, options

WILDCHAT = {"model": "gpt-4-0314", "language": "English", "turn": 3}


@pytest.fixture
def world(study, groups):
    g1, g2 = groups
    return {
        "wc-en": make_browsable(
            study,
            "wc-en",
            groups=[g1],
            source="wildchat",
            metadata=WILDCHAT,
            turn_metadata={"language": "English"},
            texts={2: ("How do I debounce a React hook?", "Use a useRef timer.")},
        ),
        "wc-zh": make_browsable(
            study,
            "wc-zh",
            n_turns=1,
            groups=[g2],
            source="wildchat",
            metadata={**WILDCHAT, "language": "Chinese", "model": "gpt-3.5-turbo-0613"},
            texts={1: ("写一个排序函数", "Here is a QuickSort in Python.")},
        ),
        "lmsys": make_browsable(
            study,
            "lmsys-77",
            n_turns=5,
            groups=[g1, g2],
            source="lmsys",
            metadata={"model": "vicuna-13b", "language": "unknown"},
        ),
        # an agent log in native JSONL: the model is on the messages, so on the turns
        "agent": make_browsable(
            study,
            "agent-run",
            n_turns=8,
            source="native",
            metadata={"title": "an agent"},
            turn_metadata={"model": "GPT-4-0314"},
        ),
        "empty": make_browsable(
            study,
            "wc-nolang",
            n_turns=2,
            source="wildchat",
            metadata={**WILDCHAT, "language": "Nolang"},
        ),
    }


def test_it_lists_every_conversation_without_filters(lead_client, world):
    response = lead_client.get(browse_url())
    assert listed(response) == {"wc-en", "wc-zh", "lmsys-77", "agent-run", "wc-nolang"}
    assert "5 conversations" in response.text


def test_it_finds_text_in_any_turn_user_or_reply_case_blind(lead_client, world):
    assert listed(lead_client.get(browse_url(), {"q": "debounce"})) == {"wc-en"}
    assert listed(lead_client.get(browse_url(), {"q": "USEREF TIMER"})) == {"wc-en"}
    assert listed(lead_client.get(browse_url(), {"q": "quicksort"})) == {"wc-zh"}
    assert listed(lead_client.get(browse_url(), {"q": "排序"})) == {"wc-zh"}
    # make_conversation's turns say "please write function number <i>"
    assert listed(lead_client.get(browse_url(), {"q": "function number 7"})) == {"agent-run"}


def test_it_finds_an_external_id(lead_client, world):
    assert listed(lead_client.get(browse_url(), {"q": "lmsys-7"})) == {"lmsys-77"}


def test_it_says_when_nothing_matches(lead_client, world):
    response = lead_client.get(browse_url(), {"q": "no such words anywhere"})
    assert listed(response) == set()
    assert "No conversation matches these filters." in response.text


def test_it_shows_which_turn_matched_the_text(lead_client, world):
    response = lead_client.get(browse_url(), {"q": "debounce"})
    assert "first match in turn 2" in response.text


def test_it_filters_by_source_among_the_sources_present(lead_client, world):
    response = lead_client.get(browse_url(), {"source": "lmsys"})
    assert listed(response) == {"lmsys-77"}
    assert options(response, "source") == ["lmsys", "native", "wildchat"]
    wildchat = listed(lead_client.get(browse_url(), {"source": "wildchat"}))
    assert wildchat == {"wc-en", "wc-zh", "wc-nolang"}


def test_it_filters_by_model_from_the_conversation_or_its_turns(lead_client, world):
    # WildChat and the agent log spell the same model differently: one choice, both found
    response = lead_client.get(browse_url(), {"model": "gpt-4-0314"})
    assert listed(response) == {"wc-en", "agent-run", "wc-nolang"}
    assert options(response, "model") == ["gpt-3.5-turbo-0613", "gpt-4-0314", "vicuna-13b"]
    assert listed(lead_client.get(browse_url(), {"model": "vicuna-13b"})) == {"lmsys-77"}


def test_a_new_import_brings_its_values_into_the_choices(lead_client, world, study):
    assert "mistral-7b" not in options(lead_client.get(browse_url()), "model")
    make_browsable(study, "new", metadata={"model": "Mistral-7B", "language": "French"})
    response = lead_client.get(browse_url(), {"model": "mistral-7b"})
    assert listed(response) == {"new"}
    assert "french" in options(response, "language")


def test_it_filters_by_language_with_no_language_as_one_choice(lead_client, world):
    response = lead_client.get(browse_url(), {"language": "chinese"})
    assert listed(response) == {"wc-zh"}
    # LMSYS says "unknown", WildChat "Nolang" for an empty conversation: one choice
    assert options(response, "language") == ["chinese", "english", "unknown"]
    assert listed(lead_client.get(browse_url(), {"language": "unknown"})) == {
        "lmsys-77",
        "wc-nolang",
    }
    # the choices read as the data spells them
    assert ">Chinese</option>" in response.text
    assert ">English</option>" in response.text


def test_it_filters_by_group_or_unassigned(lead_client, world, groups):
    g1, g2 = groups
    assert listed(lead_client.get(browse_url(), {"group": g1.pk})) == {"wc-en", "lmsys-77"}
    assert listed(lead_client.get(browse_url(), {"group": g2.pk})) == {"wc-zh", "lmsys-77"}
    unassigned = listed(lead_client.get(browse_url(), {"group": "none"}))
    assert unassigned == {"agent-run", "wc-nolang"}


def test_it_filters_by_card_state_in_some_group(lead_client, world, groups, alice, bob, dave):
    wc_en, lmsys = world["wc-en"], world["lmsys"]
    t = wc_en.turns.get(index=1)
    label(t, alice, "code_rollback")
    label(t, bob, "code_rollback")  # agreed in G1
    u = lmsys.turns.get(index=2)
    label(u, alice, "code_rollback")
    label(u, bob, "ambiguous_instruction")  # disputed in G1
    assert CardState.objects.get(turn=u, group=groups[0]).status == CardStatus.DISPUTED
    v = wc_en.turns.get(index=3)
    CardState.objects.create(turn=v, group=groups[0], status=CardStatus.ESCALATED, round=2)

    def states(value, **more):
        return listed(lead_client.get(browse_url(), {"state": value, **more}))

    assert states("agreed") == {"wc-en"}
    assert states("disputed") == {"lmsys-77"}
    assert states("escalated") == {"wc-en"}
    # open: a card with no state row yet, or a state row still open, in an assigned group
    assert states("open") == {"wc-en", "wc-zh", "lmsys-77"}


def test_open_leaves_out_a_conversation_whose_cards_have_all_left_round_1(
    lead_client, study, groups, alice, bob
):
    g1, _ = groups
    done = make_browsable(study, "done", n_turns=2, groups=[g1])
    for turn in done.turns.all():
        label(turn, alice)
        label(turn, bob)
    half = make_browsable(study, "half", n_turns=2, groups=[g1])
    label(half.turns.get(index=1), alice)  # state row, still open
    label(half.turns.get(index=2), alice)
    label(half.turns.get(index=2), bob)
    assert listed(lead_client.get(browse_url(), {"state": "open"})) == {"half"}
    assert listed(lead_client.get(browse_url(), {"state": "agreed"})) == {"done", "half"}


def test_a_state_with_a_group_is_the_state_in_that_group(
    lead_client, world, groups, alice, bob, dave, erin
):
    g1, g2 = groups
    lmsys = world["lmsys"]  # shared by G1 and G2
    for turn in lmsys.turns.all():
        label(turn, dave)
        label(turn, erin)  # every card agreed in G2, all open in G1
    assert listed(lead_client.get(browse_url(), {"state": "agreed", "group": g2.pk})) == {
        "lmsys-77"
    }
    assert listed(lead_client.get(browse_url(), {"state": "agreed", "group": g1.pk})) == set()
    assert "lmsys-77" not in listed(
        lead_client.get(browse_url(), {"state": "open", "group": g2.pk})
    )
    assert "lmsys-77" in listed(lead_client.get(browse_url(), {"state": "open", "group": g1.pk}))


def test_it_filters_by_number_of_turns(lead_client, world):
    assert listed(lead_client.get(browse_url(), {"min_turns": 5})) == {"lmsys-77", "agent-run"}
    assert listed(lead_client.get(browse_url(), {"max_turns": 2})) == {"wc-zh", "wc-nolang"}
    both = listed(lead_client.get(browse_url(), {"min_turns": 3, "max_turns": 5}))
    assert both == {"wc-en", "lmsys-77"}


def test_filters_combine(lead_client, world, groups):
    g1, _ = groups
    response = lead_client.get(
        browse_url(), {"source": "wildchat", "model": "gpt-4-0314", "language": "english"}
    )
    assert listed(response) == {"wc-en"}
    response = lead_client.get(browse_url(), {"model": "gpt-4-0314", "min_turns": 3})
    assert listed(response) == {"wc-en", "agent-run"}
    response = lead_client.get(browse_url(), {"q": "function number 1", "group": g1.pk})
    assert listed(response) == {"wc-en", "lmsys-77"}
    response = lead_client.get(browse_url(), {"q": "function", "source": "native"})
    assert listed(response) == {"agent-run"}


def test_the_form_keeps_what_was_asked(lead_client, world, groups):
    response = lead_client.get(
        browse_url(), {"q": "debounce", "model": "gpt-4-0314", "group": groups[0].pk}
    )
    assert 'value="debounce"' in response.text
    assert '<option value="gpt-4-0314" selected>' in response.text
    assert f'<option value="{groups[0].pk}" selected>' in response.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min_turns": 5, "max_turns": 2}, "at least 5 turns and at most 2"),
        ({"min_turns": "many"}, "Turns from"),
        ({"model": "no-such-model"}, "Model"),
        ({"state": "lost"}, "Card state"),
        ({"group": "999999"}, "Group"),
    ],
)
def test_bad_filters_are_refused_with_a_clear_error(lead_client, world, params, message):
    response = lead_client.get(browse_url(), params)
    assert response.status_code == 400
    assert message in response.text
    assert 'role="alert"' in response.text


def test_pages_keep_the_filters(lead_client, study):
    for i in range(55):
        make_browsable(study, f"m-{i:02d}", n_turns=1, metadata={"model": "m1"})
    for i in range(10):
        make_browsable(study, f"x-{i:02d}", n_turns=1, metadata={"model": "m2"})
    first = lead_client.get(browse_url(), {"model": "m1", "q": "function"})
    assert len(listed(first)) == 50
    assert "55 conversations" in first.text
    assert "page 1 of 2" in first.text
    assert "q=function&amp;model=m1&amp;page=2" in first.text
    second = lead_client.get(browse_url(), {"q": "function", "model": "m1", "page": 2})
    assert listed(second) == {f"m-{i:02d}" for i in range(50, 55)}
    assert "q=function&amp;model=m1&amp;page=1" in second.text
    # the pages cover every match once
    assert listed(first) | listed(second) == {f"m-{i:02d}" for i in range(55)}


def test_it_shows_and_filters_by_modality(lead_client, study, world):
    """Issue 21 point 6: where a session ran (an importer's or the lead's `modality`)."""
    make_browsable(study, "cc-1", source="claude-code",
                   metadata={"modality": "cli", "tool": "Claude Code"})  # fmt: skip
    make_browsable(study, "cursor-1", source="specstory",
                   metadata={"modality": "ide", "tool": "Cursor IDE"})  # fmt: skip
    response = lead_client.get(browse_url(), {"modality": "cli"})
    assert listed(response) == {"cc-1"}
    assert "Claude Code" in response.text
    assert listed(lead_client.get(browse_url(), {"modality": "ide"})) == {"cursor-1"}
    unknown = listed(lead_client.get(browse_url(), {"modality": "unknown"}))
    assert unknown == {"wc-en", "wc-zh", "lmsys-77", "agent-run", "wc-nolang"}


def test_an_import_under_way_brings_its_values_once_done_and_a_removed_one_takes_them(
    lead_client, world, study
):
    """The cached choices follow the conversations a lead may see (their stamp: the study's
    kept count, those of imports under way, the last visible id): an import's values appear
    when it is done, not before, and go with its conversations."""
    job = Job.objects.create(study=study, kind=JobKind.IMPORT, status=JobStatus.RUNNING)
    assert "mistral-7b" not in options(lead_client.get(browse_url()), "model")
    new = make_browsable(study, "new", metadata={"model": "Mistral-7B"})
    Conversation.objects.filter(pk=new.pk).update(import_job=job)
    assert "mistral-7b" not in options(lead_client.get(browse_url()), "model")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    assert "mistral-7b" in options(lead_client.get(browse_url()), "model")
    Conversation.objects.filter(pk=new.pk).delete()  # as a rolled-back import removes its own
    assert "mistral-7b" not in options(lead_client.get(browse_url()), "model")
