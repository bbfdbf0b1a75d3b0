"""uploads.safe_name, the name an upload is stored under: always one bounded, safe path
component, stable, with the extension that format sniffing and containers need."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from annotation.uploads import MAX_NAME_BYTES, safe_name

EXTENSIONS = [".jsonl", ".json", ".jsonl.gz", ".json.gz", ".parquet", ".md", ".zip", ".gz"]
SAFE = re.compile(r"[^\W_][\w.-]*|_[\w.-]*", re.UNICODE)

names = st.lists(
    st.one_of(
        st.characters(),  # any code point: NUL, separators, combining marks, surrogates...
        st.sampled_from(["/", "\\", ".", "..", "\x00", " ", "ﬁ", "Å", "\u0301", "／", "a" * 50]),
    ),
    max_size=200,
).map("".join)


def check_safe(result: str) -> None:
    assert result and SAFE.fullmatch(result), result
    assert len(result.encode("utf-8")) <= MAX_NAME_BYTES
    assert not result.startswith(".") and result not in (".", "..")
    assert "/" not in result and "\\" not in result and "\x00" not in result


@given(names)
@example("../../etc/passwd")
@example("..\\..\\windows\\system32")
@example("a" * 300 + ".jsonl")
@example("\x00")
@example(".jsonl")
@example("0..0..0\x1b")  # the cut leaves a new extension: two passes were not enough
def test_it_is_always_a_bounded_safe_name_and_stable(name):
    result = safe_name(name)
    check_safe(result)
    assert safe_name(result) == result


@given(names, st.sampled_from(EXTENSIONS))
def test_it_keeps_the_extension(stem, ext):
    result = safe_name(stem + ext)
    check_safe(result)
    assert result.endswith(ext)


def test_examples():
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\Users\\me\\chats.JSONL") == "chats.jsonl"
    assert safe_name("my chats (1).jsonl.gz") == "my_chats_1.jsonl.gz"
    assert safe_name(".hidden.md") == "upload.hidden.md"
    assert safe_name(".jsonl") == "upload.jsonl"
    assert safe_name("") == "upload"
    assert safe_name("..") == "upload"
    assert safe_name("e\u0301te\u0301.md") == "été.md"  # NFC: composed
    assert safe_name("a" * 300 + ".jsonl") == "a" * (MAX_NAME_BYTES - 6) + ".jsonl"
