"""The pasted list: whatever the spacing and form of each line (`name, email`,
`name <email>`, a bare email, blank lines, comments), every person comes back once, and a bad
line is named by its number while the good ones are still read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.accounts.roster import read_roster

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}(\.[a-z0-9]{1,4})?", fullmatch=True)
DOMAINS = st.sampled_from(["lab.org", "uni.example.edu", "x.io"])
PADDING = st.sampled_from(["", " ", "  ", "\t"])


def _line(draw, name: str, email: str) -> str:
    form = draw(st.sampled_from(["comma", "angle", "bare", "full"]))
    pad = draw(PADDING)
    if form == "comma":
        return f"{pad}{name}{draw(PADDING)},{draw(PADDING)}{email}{pad}"
    if form == "angle":
        return f"{pad}{name} <{email}>{pad}"
    if form == "full":
        return f'"{name.title()} Doe" <{email}>'
    return f"{pad}{email}"


@st.composite
def rosters(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    lines, people = [], []
    for name in names:
        email = f"{name}@{draw(DOMAINS)}"
        line = _line(draw, name, email)
        lines.append(line)
        people.append((name, email))
        lines.extend(draw(st.lists(st.sampled_from(["", "   ", "# note"]), max_size=2)))
    return lines, people


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(rosters())
def test_every_person_comes_back_once(roster):
    lines, people = roster
    read, errors = read_roster("\n".join(lines))
    assert errors == []
    assert [(p.username.lower(), p.email) for p in read] == [(n, e) for n, e in people]
    assert [lines[p.line - 1].strip() != "" for p in read] == [True] * len(read)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(rosters(), st.data())
def test_a_bad_line_is_named_and_the_others_read(roster, data):
    lines, people = roster
    at = data.draw(st.integers(0, len(lines)))
    bad = data.draw(st.sampled_from(["just words", "name, not-an-email", "a <b@>", "x, y, z"]))
    lines = lines[:at] + [bad] + lines[at:]
    read, errors = read_roster("\n".join(lines))
    assert len(errors) == 1 and errors[0].startswith(f"line {at + 1}: ")
    assert len(read) == len(people)


def test_a_person_twice_is_named_on_the_second_line():
    _, errors = read_roster("ann, ann@lab.org\nbob, bob@lab.org\nAnn@Lab.org")
    assert errors == ["line 3: 'ann@lab.org' is on line 1 too"]


def test_nothing_to_invite_says_how():
    assert read_roster("\n# only a comment\n")[1][0].startswith("Nobody to invite")
