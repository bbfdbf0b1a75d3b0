"""A key for every type: a tenth type added by an accepted proposal, a taxonomy with several
axes (agent-misalignment: 21 types, four of its axes pick-one, two of them labelled only
under a condition), and one with more types than
single keys (two-key sequences). Every type shows its key, the key toggles that type and no
other, and what is submitted is what the server stores."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from taxonomy.models import Taxonomy
from tests.browser.pages import checked_codes, log_in, open_card, submit_with_enter
from tests.factories import make_conversation, make_group, make_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CARD_KEYS = set("0cdfnpst")  # no smell and the card's own keys (annotation/hotkeys.py)


def shown_keys(page) -> dict[str, str]:
    """{type code: the key its <kbd> shows}, checked against the key its box answers to."""
    rows = page.eval_on_selector_all(
        "#card form label.type-toggle:has(input[name=types])",
        """labels => labels.map(l => [l.querySelector('input').value,
            (l.querySelector('kbd')?.innerText || '').replace(/\\s/g, '').toLowerCase(),
            l.querySelector('input').dataset.hotkey || ''])""",
    )
    for code, shown, answers in rows:
        assert shown and shown == answers, (code, shown, answers)
    return {code: shown for code, shown, _ in rows}


def assert_each_key_toggles_its_own_type(page, keys: dict[str, str], needs=None) -> None:
    """`needs`: {code: the code its axis's condition needs ticked first}."""
    needs = needs or {}
    for code, key in keys.items():
        first = needs.get(code)
        if first:
            page.keyboard.press(keys[first])
        for k in key:  # a two-key sequence is pressed key by key
            page.keyboard.press(k)
        assert checked_codes(page) == {code} | ({first} if first else set()), (code, key)
        for k in key:
            page.keyboard.press(k)
        if first:
            page.keyboard.press(keys[first])
        assert checked_codes(page) == set(), (code, key)


def test_it_gives_a_tenth_eleventh_and_twelfth_type_a_key(browser, live_server, alice, bob):
    study = make_study()
    new, added = study.taxonomy_version.derive(
        add=[
            {"name": "Premature optimisation", "definition": "Optimises before it works."},
            {"name": "Silent retry", "definition": "Retries without saying so."},
            {"name": "Invented API", "definition": "Calls a function that does not exist."},
        ]
    )
    study.taxonomy_version = new
    study.save()
    group = make_group(study, "g", [alice, bob])
    t1, t2 = make_conversation(study, "c1", n_turns=2, group=group).turns.order_by("index")
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, t1)

    keys = shown_keys(page)
    assert len(keys) == 12 and len(set(keys.values())) == 12
    assert not set(keys.values()) & CARD_KEYS
    # the preset's keys stay where people learnt them; the new types follow in order
    assert keys["ambiguous_instruction"] == "1" and keys["repetitive_response"] == "9"
    assert [keys[added[n]] for n in ("Premature optimisation", "Silent retry", "Invented API")] == [
        "a",
        "b",
        "e",
    ]
    assert_each_key_toggles_its_own_type(page, keys)

    page.keyboard.press("A")  # Caps Lock or Shift: the same key
    page.keyboard.press("e")
    page.keyboard.press("2")
    assert submit_with_enter(page) == t2.pk
    stored = Annotation.objects.get(turn=t1, annotator=alice, is_current=True)
    assert stored.codes == {added["Premature optimisation"], added["Invented API"]} | {
        "incomplete_instruction"
    }
    assert errors == []
    context.close()


def test_it_gives_every_type_of_every_axis_a_key(browser, live_server, alice, bob):
    study = make_study("agents", taxonomy="agent-misalignment")
    group = make_group(study, "g", [alice, bob])
    (turn,) = make_conversation(study, "session-1", n_turns=1, group=group).turns.all()
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, turn)

    keys = shown_keys(page)
    assert len(keys) == 21 and len(set(keys.values())) == 21
    assert not set(keys.values()) & CARD_KEYS
    # symptom keeps the preset's 1-7; cause follows; the recast axes keep version 1's keys
    # where they carry its types (annotation/evolution/)
    assert [keys[c] for c in ("misread_project", "inaccurate_self_reporting")] == ["1", "7"]
    assert keys["instruction_following_failure"] == "8"
    assert (keys["DS1"], keys["status_unknown"]) == ("b", "k")
    locus = ("code_or_task", "project", "external")
    needs = {c: "DS2" for c in locus} | {c: "visible" for c in ("RV1", "RV2", "RV3")}
    assert_each_key_toggles_its_own_type(page, keys, needs)

    # damage severity is pick-one: its second key replaces the first; cause allows two
    for code in ("scope_overreach", "DS1", "DS2", "code_or_task"):
        page.keyboard.press(keys[code])
    for code in ("instruction_following_failure", "underspecified_instruction"):
        page.keyboard.press(keys[code])
    expected = {
        "scope_overreach",
        "DS2",
        "code_or_task",
        "instruction_following_failure",
        "underspecified_instruction",
    }
    assert checked_codes(page) == expected
    page.keyboard.press("Enter")
    page.wait_for_url("**/queue/")  # the only card: the done page follows
    assert Annotation.objects.get(turn=turn, annotator=alice).codes == expected
    assert errors == []
    context.close()


def test_it_gives_types_past_the_single_keys_two_key_sequences(browser, live_server, alice, bob):
    types = [{"code": f"t{i:02}", "name": f"Type {i}"} for i in range(1, 41)]
    version = Taxonomy.create_from_data(
        {
            "slug": "forty",
            "name": "Forty",
            "axes": [{"code": "a", "name": "A", "categories": [{"name": "All", "types": types}]}],
        }
    )
    study = make_study("big", taxonomy="interaction-smells")
    study.taxonomy_version = version
    study.save()
    group = make_group(study, "g", [alice, bob])
    (turn,) = make_conversation(study, "c1", n_turns=1, group=group).turns.all()
    context, page, errors = log_in(browser, live_server, "alice")
    open_card(page, live_server.url, turn)

    keys = shown_keys(page)
    assert len(set(keys.values())) == 40
    assert keys["t01"] == "1" and keys["t27"] == "y" and keys["t28"] == "z1"
    assert keys["t36"] == "z9" and keys["t40"] == "zg" and "z" not in keys.values()
    assert not set(keys.values()) & CARD_KEYS
    assert_each_key_toggles_its_own_type(page, keys)
    for code in ("t05", "t33", "t40"):
        for k in keys[code]:
            page.keyboard.press(k)
    page.keyboard.press("Enter")
    page.wait_for_url("**/queue/")
    assert Annotation.objects.get(turn=turn, annotator=alice).codes == {"t05", "t33", "t40"}
    assert errors == []
    context.close()
