"""An evidence quote anchored to a span of a turn (annotation/evidence.py): the card's quote
key finds a selection in the stored text, the submit stores (turn, part, start, end) with the
quote, and the server refuses a quote that is not at its span, a turn of another
conversation or a later turn, naming what and where; nothing stored is lost."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from annotation.evidence import EvidenceError, EvidenceSpan, _normalised, check_quote, locate
from annotation.models import Annotation, Turn
from tests.factories import HTMX, label, make_conversation, make_group

# text with the characters that trouble offsets: Markdown markup, line ends, astral planes
TEXT = st.text(alphabet=st.sampled_from(list("ab c\n\r\t*_`#é漢😀")) | st.characters(), max_size=80)


@st.composite
def text_and_span(draw):
    text = draw(TEXT.filter(bool))
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    return text, start, end


@given(text_and_span())
def test_any_span_of_the_stored_text_round_trips(case):
    text, start, end = case
    assert check_quote(text, start, end, text[start:end]) == text[start:end]


@given(text_and_span())
def test_a_span_posted_with_crlf_line_ends_is_the_same_quote(case):
    # a browser posts a line end as CR LF: the stored text at the span is what is kept
    text, start, end = case
    posted = text[start:end].replace("\r\n", "\n").replace("\n", "\r\n")
    assert check_quote(text, start, end, posted) == text[start:end]


@given(text_and_span(), st.text(min_size=1, max_size=10))
def test_a_quote_not_at_its_span_is_refused(case, other):
    text, start, end = case
    quote = text[start:end]
    lines = str.maketrans({"\r": "\n"})
    assume(
        other.replace("\r\n", "\n").translate(lines) != quote.replace("\r\n", "\n").translate(lines)
    )
    with pytest.raises(EvidenceError, match=f"characters {start}-{end}"):
        check_quote(text, start, end, other)


@given(TEXT, st.integers(-5, 100), st.integers(-5, 100))
def test_a_span_outside_the_text_is_refused(text, start, end):
    assume(not (0 <= start < end <= len(text)))
    with pytest.raises(EvidenceError, match=f"{len(text)} characters"):
        check_quote(text, start, end, text[max(start, 0) : max(end, 0)])


@settings(suppress_health_check=[HealthCheck.filter_too_much])
@given(text_and_span(), st.integers(0, 80))
def test_locate_finds_what_a_reader_selected(case, hint):
    """Whatever part of the text is selected, `locate` returns a span of the stored text
    that reads the same (markup and white space aside), starting and ending on a character
    the reader sees."""
    text, start, end = case
    wanted = _normalised(text[start:end])[0].strip()
    assume(wanted)
    found = locate(text, text[start:end], hint)
    assert found is not None
    a, b = found
    assert _normalised(text[a:b])[0] == wanted


def test_locate_maps_rendered_markdown_back_to_the_stored_text():
    text = "Run **pytest  -q** first,\nthen `ruff`.\n\nThen pytest -q again."
    a, b = locate(text, "pytest -q first, then ruff")
    assert text[a:b] == "pytest  -q** first,\nthen `ruff"
    # the second "pytest -q", chosen by where the selection starts in the rendered text
    a, b = locate(text, "pytest -q", hint=40)
    assert (a, text[a:b]) == (text.rindex("pytest -q"), "pytest -q")
    assert locate(text, "pytest -x") is None
    assert locate(text, "  ** ") is None


# --- on the card ----------------------------------------------------------------------------


@pytest.fixture
def cards(study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    conversation = make_conversation(study, "conv-a", n_turns=3, group=group)
    turns = list(conversation.turns.order_by("index"))
    Turn.objects.filter(pk=turns[0].pk).update(
        user_text="Never touch **config.py**, please.", reply_text="Done: I edited config.py."
    )
    return [Turn.objects.get(pk=t.pk) for t in turns]


def post_card(client, study, turn, **data):
    data = {"types": ["must_not_violation"], **data}
    return client.post(reverse("card", args=[study.slug, turn.pk]), data, **HTMX)


def span_fields(turn, part, start, end, quote) -> dict:
    return {
        "evidence": quote,
        "evidence_turn": turn.pk,
        "evidence_part": part,
        "evidence_start": start,
        "evidence_end": end,
    }


@pytest.mark.django_db
def test_a_quote_from_an_earlier_turn_is_stored_with_its_span(client, study, alice, cards):
    first, second = cards[0], cards[1]
    start = first.reply_text.index("I edited")
    client.force_login(alice)
    quote = "I edited config.py"
    response = post_card(
        client, study, second, **span_fields(first, "reply", start, start + len(quote), quote)
    )
    assert response.status_code == 200
    stored = Annotation.objects.get(turn=second, annotator=alice)
    assert (stored.evidence, stored.evidence_turn, stored.evidence_part) == (quote, first, "reply")
    assert (stored.evidence_start, stored.evidence_end) == (start, start + len(quote))
    # the card shows it again, with its place and a way to remove it
    page = client.get(reverse("card", args=[study.slug, second.pk])).content.decode()
    assert "Evidence quoted from turn 1, reply (characters 6–24)" in page
    assert "Remove the quote" in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    "where, message",
    [
        ("shifted", "the quote is not the text at characters 7-25 of turn 1's reply"),
        ("later turn", "is not this card's turn or an earlier turn of its conversation"),
        ("other conversation", "is not this card's turn or an earlier turn of its conversation"),
        ("bad part", "unknown part 'tool'"),
        ("past the end", "characters 6-99 are not a span of turn 1's reply (25 characters)"),
    ],
)
def test_a_span_that_does_not_hold_is_refused_and_nothing_is_lost(
    client, study, alice, cards, where, message
):
    first, second, third = cards
    label(second, alice, "must_do_omission", note="kept")
    quote = "I edited config.py"
    fields = span_fields(first, "reply", 6, 24, quote)
    if where == "shifted":
        fields.update(evidence_start=7, evidence_end=25)
    elif where == "later turn":
        fields["evidence_turn"] = third.pk
    elif where == "other conversation":
        other = make_conversation(study, "conv-b", n_turns=1)
        fields["evidence_turn"] = other.turns.get().pk
    elif where == "bad part":
        fields["evidence_part"] = "tool"
    else:
        fields["evidence_end"] = 99
    client.force_login(alice)
    response = post_card(client, study, second, **fields)
    assert response.status_code == 422
    assert message in unescape(response.content.decode())
    stored = Annotation.objects.get(turn=second, annotator=alice, is_current=True)
    assert (stored.note, stored.evidence, stored.evidence_turn) == ("kept", "", None)


@pytest.mark.django_db
def test_the_quote_key_finds_the_selection_in_the_stored_text(client, study, alice, cards):
    first, second = cards[0], cards[1]
    client.force_login(alice)
    url = reverse("card_evidence", args=[study.slug, second.pk])
    # the page renders **config.py** bold: the selection has no asterisks
    data = {"quote": "touch config.py", "turn": first.pk, "part": "user", "hint": "6"}
    response = client.post(url, data, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    start = first.user_text.index("touch")
    assert 'name="evidence" value="touch **config.py"' in html
    assert f'name="evidence_start" value="{start}"' in html
    assert f'name="evidence_end" value="{start + len("touch **config.py")}"' in html
    # not in that message: said, with the text
    data["quote"] = "rm -rf"
    response = client.post(url, data, **HTMX)
    assert response.status_code == 422
    said = unescape(response.content.decode())
    assert "“rm -rf” is not in the stored text of turn 1's user message" in said
    # nothing selected inside a message (a tool call, a heading)
    response = client.post(url, {"quote": "Bash", "turn": "", "part": ""}, **HTMX)
    assert response.status_code == 422
    assert "select text inside a message" in unescape(response.content.decode())
    assert not Annotation.objects.exists()  # the box stores nothing


@pytest.mark.django_db
def test_charlie_cannot_quote_on_a_card_he_does_not_annotate(client, study, charlie, cards):
    client.force_login(charlie)
    url = reverse("card_evidence", args=[study.slug, cards[1].pk])
    response = client.post(url, {"quote": "Done", "turn": cards[0].pk, "part": "reply"}, **HTMX)
    assert response.status_code in (403, 404)


@pytest.mark.django_db
def test_the_span_is_shown_to_the_other_annotator_only_after_round_1(
    client, study, alice, bob, cards
):
    first = cards[0]
    quote = "I edited config.py"
    label(
        first,
        alice,
        "must_not_violation",
        evidence=quote,
        span=EvidenceSpan(first.pk, "reply", 6, 24),
    )
    client.force_login(bob)
    discussion = reverse("discussion", args=[study.slug, first.pk])
    before = client.get(discussion)
    assert quote not in before.content.decode()
    label(first, bob, "must_do_omission")  # round 1 closes, disputed: the labels are revealed
    after = client.get(discussion).content.decode()
    assert quote in after
    assert "quoted from turn 1, reply (characters 6–24)" in after


@pytest.mark.django_db
@pytest.mark.parametrize("edited", [False, True])
def test_a_round_2_revision_keeps_the_span_of_a_quote_left_as_it_was(
    client, study, alice, bob, cards, edited
):
    first = cards[0]
    quote = "I edited config.py"
    label(
        first,
        alice,
        "must_not_violation",
        evidence=quote,
        span=EvidenceSpan(first.pk, "reply", 6, 24),
    )
    label(first, bob, "must_do_omission")  # disputed: round 2 opens
    client.force_login(alice)
    evidence = quote + " (and more)" if edited else quote
    response = client.post(
        reverse("discussion", args=[study.slug, first.pk]),
        {"types": ["must_do_omission"], "evidence": evidence, "round": 2},
        **HTMX,
    )
    assert response.status_code == 200, response.content.decode()[:500]
    revised = Annotation.objects.get(turn=first, annotator=alice, round=2, is_current=True)
    assert revised.evidence == evidence
    if edited:  # an edited quote is free text: it no longer claims the span
        assert revised.span is None
    else:
        assert revised.span == EvidenceSpan(first.pk, "reply", 6, 24)


# --- inside a reply's tool call, tool result or thinking (issue 21 point 7) -----------------

PARTS = [
    {"kind": "thinking", "text": "The tests are flaky; maybe retry them."},
    {"kind": "tool_use", "name": "Bash", "input": {"command": "pytest -x --count 3"}},
    {"kind": "tool_result", "content": "3 failed, 12 passed in 4.2s"},
]


@pytest.fixture
def tool_card(cards):
    first = cards[0]
    Turn.objects.filter(pk=first.pk).update(reply_parts=PARTS)
    return [Turn.objects.get(pk=t.pk) for t in cards]


@pytest.mark.django_db
def test_the_quote_key_finds_a_selection_inside_a_tool_result(client, study, alice, tool_card):
    first, second = tool_card[0], tool_card[1]
    client.force_login(alice)
    url = reverse("card_evidence", args=[study.slug, second.pk])
    data = {"quote": "3 failed", "turn": first.pk, "part": "tool_result", "part_index": "2"}
    response = client.post(url, data, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="evidence_part" value="tool_result"' in html
    assert 'name="evidence_part_index" value="2"' in html
    assert 'name="evidence_start" value="0"' in html and 'name="evidence_end" value="8"' in html
    assert "Evidence quoted from turn 1, tool result (part 2)" in html
    # a tool call's arguments are its text as the card prints it (JSON indented by 2)
    data = {"quote": "pytest -x", "turn": first.pk, "part": "tool_call", "part_index": "1"}
    assert 'name="evidence_part_index" value="1"' in client.post(url, data, **HTMX).content.decode()
    # the index must name a part of that kind, and a reply part needs one
    for index, said in (
        ("1", "turn 1 has no tool result at part 1"),
        ("9", "turn 1 has no tool result at part 9"),
        ("", "a quote from a tool result needs its part index"),
    ):
        data = {"quote": "3 failed", "turn": first.pk, "part": "tool_result", "part_index": index}
        response = client.post(url, data, **HTMX)
        assert response.status_code == 422
        assert said in unescape(response.content.decode())


@pytest.mark.django_db
def test_a_quote_from_a_tool_result_is_stored_with_its_part_and_checked(
    client, study, alice, tool_card
):
    first, second = tool_card[0], tool_card[1]
    client.force_login(alice)
    fields = span_fields(first, "tool_result", 0, 8, "3 failed") | {"evidence_part_index": 2}
    # the server checks the quote at the span of that part, whatever the client sent
    for bad, said in (
        ({"evidence_part_index": 0}, "turn 1 has no tool result at part 0"),
        ({"evidence_end": 9}, "not the text at characters 0-9 of turn 1's tool result (part 2)"),
        ({"evidence_part_index": ""}, "a quote from a tool result needs its part index"),
    ):
        response = post_card(client, study, second, **(fields | bad))
        assert response.status_code == 422, bad
        assert said in unescape(response.content.decode())
    assert not Annotation.objects.exists()
    assert post_card(client, study, second, **fields).status_code == 200
    stored = Annotation.objects.get(turn=second, annotator=alice)
    assert stored.span == EvidenceSpan(first.pk, "tool_result", 0, 8, 2)
    assert stored.evidence == "3 failed"
    page = client.get(reverse("card", args=[study.slug, second.pk])).content.decode()
    assert "Evidence quoted from turn 1, tool result (part 2) (characters 0–8)" in page


@pytest.mark.django_db
def test_the_card_marks_each_tool_part_as_quotable_text(client, study, alice, tool_card):
    first = tool_card[0]
    client.force_login(alice)
    page = client.get(reverse("card", args=[study.slug, first.pk])).content.decode()
    for kind, index in (("thinking", 0), ("tool_call", 1), ("tool_result", 2)):
        marker = f'data-turn-id="{first.pk}" data-part="{kind}" data-part-index="{index}"'
        assert marker in page, kind
