"""The coding filter's rules (annotation/intake/coding_filter.py): every language by name,
abbreviation, extension and code fence; word boundaries; the case, context and stop-phrase
rules of the short or ambiguous names; near misses; and the validation of edited rules."""

from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.intake.coding_filter import (
    DEFAULT_LANGUAGES,
    TIOBE_MONTH,
    Matcher,
    RulesError,
    checked_rules,
    default_rules,
    matches,
    near_misses,
    validate_rules,
)
from annotation.intake.coding_report import CodingFilter

LANGUAGES = {entry["language"]: entry for entry in DEFAULT_LANGUAGES}


def _terms(entry: dict) -> list[str]:
    return [*entry["names"], *entry["abbreviations"]]


def _reasons(text: str, rules=None) -> list[tuple[str, str]]:
    return [(m.language, m.reason) for m in near_misses(text, rules)]


# -- the study's languages ------------------------------------------------------------------


def test_it_has_the_twenty_languages_of_the_tiobe_index():
    assert TIOBE_MONTH == "January 2025"
    assert list(LANGUAGES) == [
        "Python", "C++", "Java", "C", "C#", "JavaScript", "Go", "SQL", "Visual Basic",
        "Fortran", "Delphi/Object Pascal", "Scratch", "PHP", "Rust", "MATLAB", "Ruby",
        "Assembly language", "R", "Swift", "COBOL",
    ]  # fmt: skip
    assert all(entry["names"] and entry["extensions"] for entry in DEFAULT_LANGUAGES)
    assert validate_rules(default_rules()) == []


@pytest.mark.parametrize(
    "text, language",
    [
        ("How do I reverse a list in Python?", "Python"),
        ("My C++ template does not compile", "C++"),
        ("Explain streams in java please", "Java"),
        ("Write a linked list in C", "C"),
        ("What is a delegate in C#?", "C#"),
        ("Why is my JavaScript promise pending", "JavaScript"),
        ("How do I write a web server in Go?", "Go"),
        ("Write an SQL query for the top 5 customers", "SQL"),
        ("A Visual Basic macro for Excel", "Visual Basic"),
        ("Fortran arrays start at 1", "Fortran"),
        ("A Delphi form with a button and its code", "Delphi/Object Pascal"),
        ("Make a Scratch program where the cat jumps", "Scratch"),
        ("PHP sessions expire too early", "PHP"),
        ("The borrow checker in Rust rejects my function", "Rust"),
        ("Plot a sine wave in MATLAB", "MATLAB"),
        ("A Ruby method that sums an array", "Ruby"),
        ("Explain this x86 Assembly code", "Assembly language"),
        ("Fit a linear model in R", "R"),
        ("A Swift struct for the iOS app", "Swift"),
        ("Read a file in COBOL", "COBOL"),
    ],
)
def test_it_matches_each_language_as_people_write_it(text, language):
    assert matches(text) == [language]


@pytest.mark.parametrize(
    "language, term",
    [(name, term) for name, entry in LANGUAGES.items() for term in _terms(entry)],
)
def test_it_matches_every_name_and_abbreviation_in_a_code_sentence(language, term):
    assert language in matches(f"Here is my code in {term}, it fails.")


@pytest.mark.parametrize(
    "language, extension",
    [(name, ext) for name, entry in LANGUAGES.items() for ext in entry["extensions"]],
)
def test_it_matches_every_file_extension(language, extension):
    assert matches(f"please look at src/main{extension} again") == [language]
    assert matches(f"I have three {extension} files") == [language]


@pytest.mark.parametrize(
    "tag, language",
    [("python", "Python"), ("go", "Go"), ("golang", "Go"), ("r", "R"), ("C", "C"),
     ("cpp", "C++"), ("cs", "C#"), ("js", "JavaScript"), ("rs", "Rust"), ("vb", "Visual Basic"),
     ("asm", "Assembly language"), ("sql", "SQL"), ("{.swift}", "Swift")],
)  # fmt: skip
def test_it_matches_a_code_fence_by_its_language_whatever_the_case_rules(tag, language):
    assert matches(f"Here:\n```{tag}\nx = 1\n```\n") == [language]


def test_an_unknown_or_missing_fence_tag_is_no_language():
    assert matches("```bash\nls -la\n```\n```\nplain\n```") == []


# -- word boundaries --------------------------------------------------------------------------


def test_a_short_name_is_not_found_inside_longer_names():
    assert matches("C++ code and C# code and Objective-C code") == ["C++", "C#"]
    assert matches("JavaScript code") == ["JavaScript"]
    assert matches("see www.python.org") == []


def test_a_name_inside_a_longer_word_is_a_near_miss_not_a_match():
    assert matches("that is very Pythonic and Javanese") == []
    assert _reasons("that is very Pythonic") == [("Python", "inside the word 'Pythonic'")]
    assert _reasons("I trust you") == []  # only words that start with a name: not "trust"


def test_letters_and_digits_are_ascii_so_cjk_text_holds_the_word():
    assert matches("用Go写一个程序") == ["Go"]
    assert matches("用Python写代码") == ["Python"]


def test_one_letter_extensions_need_a_real_file_name():
    assert matches("we meet at 9 a.m. to talk") == []
    assert matches("edit app.m and util.h") == ["MATLAB", "C"]
    assert matches("the version 1.c is out") == []
    assert matches("flags: --main.py, and 3.py") == ["Python"]
    assert matches("a v1.2.py file") == []


# -- case, context and stop phrases ------------------------------------------------------------


def test_go_as_the_language_is_kept_and_lets_go_is_dropped():
    assert matches("How do I write a web server in Go?") == ["Go"]
    assert matches("Ok, let's go!") == []
    assert _reasons("Ok, let's go!") == [("Go", "'go' is not written 'Go'")]
    assert _reasons("Let's Go to the beach") == [("Go", 'part of the stop phrase "let\'s go"')]
    assert _reasons("Go ahead and fix the code") == [("Go", "part of the stop phrase 'go ahead'")]


@pytest.mark.parametrize(
    "language, term",
    [(n, t) for n, e in LANGUAGES.items() for t in e["exact_case"] if t.lower() != t],
)
def test_an_exact_case_term_in_lower_case_is_a_near_miss(language, term):
    text = f"my code in {term.lower()} has a bug"
    assert language not in matches(text)
    assert (language, f"{term.lower()!r} is not written {term!r}") in _reasons(text)


def test_case_free_names_match_in_any_case():
    assert matches("PYTHON code") == ["Python"] == matches("python")
    assert matches("cobol") == ["COBOL"]


@pytest.mark.parametrize(
    "text, language",
    [("I got an A and a C this term", "C"), ("I love Ruby, she is my cat", "Ruby"),
     ("Rust never sleeps", "Rust"), ("R&D spending rose", "R"), ("The Delphi oracle spoke", "Delphi/Object Pascal")],
)  # fmt: skip
def test_a_term_that_needs_a_code_context_without_one_is_a_near_miss(text, language):
    assert matches(text) == []
    assert (language, "no code context within 100 characters") in _reasons(text)


def test_a_code_context_is_a_word_a_fence_a_lead_word_or_another_language_nearby():
    assert matches("Ruby is my favourite language") == ["Ruby"]  # a context word
    assert matches("Ruby:\n```\nputs 1\n```") == ["Ruby"]  # a code fence
    assert matches("translate it into Rust") == ["Rust"]  # a lead word right before
    assert matches("Python or Go?") == ["Python", "Go"]  # a language that needs no context
    assert matches("Is Ruby nice? " + "x" * 120 + " code") == []  # too far away


def test_the_context_window_is_part_of_the_rules():
    rules = default_rules()
    rules["context_window"] = 10
    assert matches("Ruby is a gem, and this is code", rules) == []
    rules["context_window"] = 40
    assert matches("Ruby is a gem, and this is code", rules) == ["Ruby"]


@pytest.mark.parametrize(
    "text, language, phrase",
    [("I built it from Scratch", "Scratch", "from scratch"),
     ("a Taylor Swift song in my code", "Swift", "taylor swift"),
     ("print Pascal's triangle in code", "Delphi/Object Pascal", "pascal's triangle"),
     ("the assembly line code", "Assembly language", "assembly line")],
)  # fmt: skip
def test_a_mention_inside_a_stop_phrase_never_counts(text, language, phrase):
    assert language not in matches(text)
    assert (language, f"part of the stop phrase {phrase!r}") in _reasons(text)


def test_a_stop_phrase_is_matched_on_word_boundaries():
    rules = default_rules()
    rules["languages"][6]["stop_phrases"] = ["go to"]
    assert matches("the Go tool reports an error", rules) == ["Go"]
    assert matches("Go to the settings to fix the error", rules) == []


# -- hypothesis -------------------------------------------------------------------------------

# every name, abbreviation, extension and fence tag, lower case: a text holding none of them,
# anywhere, in any case, holds no language token
TOKENS = sorted(Matcher(default_rules()).fence_tags, key=len, reverse=True)


def _scrub(text: str) -> str:
    pattern = re.compile("|".join(re.escape(t) for t in TOKENS), re.IGNORECASE)
    while True:
        scrubbed = pattern.sub(" ", text)
        if scrubbed == text:
            return text
        text = scrubbed


TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
        st.sampled_from(list(" .-+#/\n`~_'")),
    ),
    max_size=300,
)
MENTIONS = [
    (language, mention)
    for language, entry in LANGUAGES.items()
    for mention in [
        *(f"my code in {term} fails" for term in _terms(entry)),
        *(f"see main{ext} again" for ext in entry["extensions"]),
    ]
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_a_text_with_no_language_token_never_matches(text):
    assert matches(_scrub(text)) == []


@settings(max_examples=300, deadline=None)
@given(TEXT, st.sampled_from(MENTIONS), st.integers(min_value=0))
def test_adding_a_language_mention_to_any_text_makes_it_match(text, mention, at):
    language, phrase = mention
    at = at % (len(text) + 1)
    assert language in matches(f"{text[:at]}\n{phrase}\n{text[at:]}")


# -- the report ---------------------------------------------------------------------------------


class _Built:
    """An importer's BuiltConversation, as far as the filter reads it."""

    def __init__(self, external_id, *turns):
        self.external_id, self.location, self.system_prompt = external_id, "f.jsonl:1", ""
        self.turns = [_Turn(i, u, r) for i, (u, r) in enumerate(turns, 1)]


class _Turn:
    def __init__(self, index, user_text, reply_text):
        self.index, self.user_text, self.reply_text = index, user_text, reply_text


def test_the_report_counts_languages_reasons_and_gives_examples_in_context():
    coding = CodingFilter(default_rules())
    assert coding(_Built("a", ("hi", "hello"), ("write it in Go please", "package main")))
    assert not coding(_Built("b", ("let's go to the park", "Sure!")))
    assert not coding(_Built("c", ("what is the weather", "sunny")))
    assert coding(_Built("d", ("sort in python", "use sorted() from scratch")))
    result = coding.result()
    assert (result["scanned"], result["matched"], result["dropped"]) == (4, 2, 2)
    assert result["dropped_reasons"] == {"case": 1, "no language mentioned": 1}
    go = next(e for e in result["languages"] if e["language"] == "Go")
    assert go["conversations"] == 1
    assert go["near_misses"] == {"case": 1}
    [example] = go["examples"]
    assert example["conversation"] == "a (f.jsonl:1)" and example["where"] == "turn 2 user"
    assert (example["before"], example["match"], example["after"]) == (
        "write it in ",
        "Go",
        " please",
    )
    [miss] = go["near_miss_examples"]
    assert miss["match"] == "go" and miss["kept"] is False
    assert miss["reason"] == "'go' is not written 'Go'"
    scratch = next(e for e in result["languages"] if e["language"] == "Scratch")
    assert scratch["near_miss_examples"][0]["kept"] is True  # conversation d kept (Python)
    assert result["rules"] == default_rules() and len(result["rules_digest"]) == 12


def test_the_report_keeps_only_a_few_examples_per_language():
    coding = CodingFilter(default_rules())
    for i in range(20):
        coding(_Built(f"c{i}", ("python code", "ok")))
    python = next(e for e in coding.result()["languages"] if e["language"] == "Python")
    assert python["conversations"] == 20 and len(python["examples"]) == 3


# -- validation ----------------------------------------------------------------------------------


def _edited(index: int, **changes) -> dict:
    rules = default_rules()
    rules["languages"][index].update(changes)
    return rules


@pytest.mark.parametrize(
    "rules, error",
    [
        (_edited(6, exact_case=["GO"]), "Go: exact_case: 'GO' is not one of its names or abbreviations"),
        (_edited(6, needs_context=["Gopher"]), "Go: needs_context: 'Gopher' is not one of its names or abbreviations"),
        (_edited(0, extensions=["py"]), "Python: extensions: 'py' is not a file extension"),
        (_edited(0, names=[]), "Python: names: give at least one name"),
        (_edited(0, names=["Python", " Py "]), "Python: names: an entry is empty or has spaces around it"),
        (_edited(0, names=["Python", "+++"]), "Python: names: '+++' has no letter or digit"),
        (_edited(0, abbreviations=["js"]), "JavaScript: 'JS' is already a term of Python"),
        (_edited(0, stop_phrases=["monty"]), "Python: stop_phrases: 'monty' contains none of its names"),
        (_edited(0, colour="green"), "Python: unknown field 'colour'"),
        (_edited(0, names="Python"), "Python: names: must be a list of strings"),
        (_edited(1, language="Python"), "Python: language: listed twice"),
        ({**default_rules(), "context_window": 5}, "context_window: must be between 10 and 1000, not 5"),
        ({**default_rules(), "context_window": "9"}, "context_window: must be a whole number"),
        ({**default_rules(), "context_words": ["code", ""]}, "context_words: must be a list of words"),
        ({**default_rules(), "languages": []}, "languages: give at least one language"),
        ({**default_rules(), "extra": 1}, "unknown setting 'extra'"),
        ([], "the rules must be an object, not list"),
    ],
)  # fmt: skip
def test_it_refuses_bad_rules_naming_the_language_and_field(rules, error):
    errors = validate_rules(rules)
    assert any(e.startswith(error) for e in errors), errors
    with pytest.raises(RulesError) as caught:
        checked_rules(rules)
    assert caught.value.errors == errors


def test_edited_rules_change_what_matches():
    rules = copy.deepcopy(default_rules())
    rules["languages"].append({"language": "Kotlin", "names": ["Kotlin"], "extensions": [".kt"]})
    assert matches("Kotlin coroutines", rules) == ["Kotlin"]
    assert matches("Kotlin coroutines") == []
    rules["languages"][6]["exact_case"] = []  # go in any case
    assert matches("let's go write code", rules) == []  # still a stop phrase
    assert matches("in go code", rules) == ["Go"]
