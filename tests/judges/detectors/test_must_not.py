"""must-not-violation, from TAXONOMY.md's definition: "the reply breaks a mandatory negative
constraint stated earlier (a forbidden library, an immutable code segment, a prohibited
behaviour)": here the forbidden library or function, imported or called."""

from __future__ import annotations

import pytest

from annotation.judges.detectors import TurnView, detect, get
from annotation.judges.detectors.must_not import bans_in_force

from .conftest import conversation, fence

DETECTOR = get("must-not-violation")


def found(turns):
    return [(i, s) for i, s, _ in detect(DETECTOR, turns)]


# (ban, language, code that imports the banned name)
VIOLATIONS = [
    ("Don't use numpy.", "python", "import numpy as np\n\nprint(np.mean([1, 2]))"),
    ("Please do not use pandas.", "python", "from pandas.io import json\nx = 1"),
    (
        "No `lodash`, plain JS only.",
        "javascript",
        "const _ = require('lodash/fp');\n_.map([], x => x);",
    ),
    ("Avoid jQuery.", "ts", "import $ from 'jquery';\n$('#a').hide();"),
    ("never use Guava", "java", "import com.google.common.collect.Lists;\nimport guava.Thing;"),
    ("Don't use Apache Commons or Guava", "kotlin", "import guava.base.Strings\nfun f() = 1"),
    ("without std::regex please", "cpp", "#include <regex>\nint main() { return 0; }"),
    ("do not use LINQ", "csharp", "using System.Linq;\nclass A {}"),
    (
        "Don't use gorilla/mux.",
        "go",
        'package main\n\nimport (\n\t"fmt"\n\tmux "github.com/gorilla/mux"\n)',
    ),
    ("Do not use the regex crate", "rust", "use regex::{Regex, Captures};\nfn main() {}"),
    ("don't use GuzzleHttp", "php", "<?php\nuse GuzzleHttp\\Client;\n$c = new Client();"),
    ("Don't use nokogiri", "ruby", "require 'nokogiri'\nputs 1"),
    ("Don't use dplyr", "r", "library(dplyr)\nx <- 1"),
    ("Don't use Alamofire", "swift", "import Alamofire\nlet x = 1"),
    ("Don't use Moose", "perl", "use Moose;\nmy $x = 1;"),
    ("don't use System.IO", "vb", "Imports System.IO\nModule M\nEnd Module"),
    (
        "Don't use SysUtils",
        "delphi",
        "program P;\nuses\n  Classes, SysUtils in 'SysUtils.pas';\nbegin\nend.",
    ),
    ("Don't use mpi", "fortran", "program p\n  use mpi\n  implicit none\nend program p"),
    ("don't use the io_macros include", "nasm", '%include "io_macros.inc"\nsection .text'),
    ("Do not use DATEUTIL", "cobol", "       IDENTIFICATION DIVISION.\n       COPY DATEUTIL.\n"),
    ("Don't use postgis", "sql", "CREATE EXTENSION IF NOT EXISTS postgis;\nSELECT 1;"),
    ("Don't use eval()", "javascript", "const x = eval('1 + 1');"),
    ("Don't use os.system", "python", "import subprocess\nos.system('ls')"),
]


@pytest.mark.parametrize(("ban", "lang", "code"), VIOLATIONS)
def test_a_ban_then_the_banned_name_in_later_code_is_a_violation(ban, lang, code):
    turns = conversation(
        (f"Write a small program. {ban}", "Sure:\n\n" + fence("x = 1", "text")),
        ("Now extend it.", "Here:\n\n" + fence(code, lang)),
    )
    result = detect(DETECTOR, turns)
    assert [i for i, _, _ in result] == [0, 1]
    index, score, evidence = result[1]
    assert score >= 0.7, (ban, evidence)
    assert evidence.turns == (0, 1)
    assert ban.split()[0].lower() in evidence.quotes[0].lower()  # the ban's sentence


def test_an_import_weighs_more_than_a_call_and_a_firm_ban_more_than_avoid():
    def score(ban, code):
        turns = conversation((ban, ""), ("go on", fence(code)))
        return detect(DETECTOR, turns)[0][1]

    assert score("Don't use numpy.", "import numpy") == 1.0
    assert score("Don't use numpy.", "x = numpy.array([1])") == 0.9
    assert score("Avoid numpy.", "import numpy") == 0.8


def test_a_ban_later_lifted_is_no_violation():
    for lift in (
        "OK, you can use numpy now.",
        "Feel free to use numpy.",
        "Actually numpy is allowed.",
        "Use numpy, it is faster.",
        "It's fine to use NumPy after all.",
    ):
        turns = conversation(
            ("Sum a list. Don't use numpy.", fence("print(sum([1, 2]))")),
            (lift, fence("import numpy as np\nprint(np.sum([1, 2]))")),
        )
        assert found(turns) == [(0, 0.0)], lift  # turn 1 has no ban in force: not judged


def test_a_ban_lifted_then_renewed_is_in_force_again():
    turns = conversation(
        ("Don't use numpy.", fence("x = 1")),
        ("You can use numpy now.", fence("import numpy")),
        ("Hmm, no: do not use numpy after all.", fence("import numpy")),
    )
    assert found(turns) == [(0, 0.0), (2, 1.0)]


def test_code_without_the_banned_name_is_no_violation():
    turns = conversation(
        (
            "Don't use numpy.",
            fence("def mean(xs):\n    return sum(xs) / len(xs)  # not numpy.mean"),
        ),
        ("Add median.", fence("import statistics\n\nmedian = statistics.median")),
    )
    assert found(turns) == [(0, 0.0), (1, 0.0)]


@pytest.mark.parametrize(
    "text",
    [
        "No problem, thanks!",
        "I get ModuleNotFoundError: No module named 'numpy'",
        "Can it work without errors?",
        "Write it without using recursion.",
        "Don't use for loops or list comprehensions.",
        "no external libraries please",
        "```python\n# don't use numpy\nimport numpy\n```",
    ],
)
def test_words_that_ban_no_name_make_no_ban(text):
    assert bans_in_force([], TurnView(0, text, "")) == []


def test_a_list_of_names_bans_each():
    names = {
        b.name for b in bans_in_force([], TurnView(0, "Don't use numpy, pandas or scipy.", ""))
    }
    assert names == {"numpy", "pandas", "scipy"}


def test_the_evidence_names_the_bans_own_turn_index():
    turns = [
        TurnView(4, "Don't use numpy.", ""),
        TurnView(7, "Go on.", ""),
        TurnView(9, "More.", fence("import numpy")),
    ]
    assert [(i, s, e.turns) for i, s, e in detect(DETECTOR, turns)] == [(9, 1.0, (4, 9))]


def test_a_banned_function_called_is_a_violation():
    turns = conversation(
        ("Log with the logging module, don't use print statements.", fence("import logging")),
        ("Add a message.", fence("import logging\nprint('started')")),
    )
    result = detect(DETECTOR, turns)
    assert [(i, s) for i, s, _ in result] == [(0, 0.0), (1, 0.9)]
    assert result[1][2].quotes[1] == "print('started')"


def test_the_evidence_quotes_the_whole_ban_sentence():
    turns = conversation(("Don't use numpy.", ""), ("Go.", fence("import numpy")))
    assert detect(DETECTOR, turns)[0][2].quotes == ("Don't use numpy.", "import numpy")
