"""Conversation text as HTML a reviewer can read and nobody can use against them.

The text is Markdown written by users and models, and hostile input: it is parsed with raw
HTML off (a tag in the text is shown as text), links and images are kept only for http(s)
and mailto targets, and the HTML that comes out is cleaned again by an allowlist sanitizer
(nh3), so a bug in one layer is not a hole. Links are never followed by the browser on its
own (no image, no prefetch) and show their real target beside their text. Code blocks are
highlighted here, on the server, by the fence's language, else by a guess among the
languages coding conversations hold (annotation/code_guess.py).

An agent's reply parts (tool calls, tool results, thinking) are summarised in one line and
rendered the same way (`reply_part`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import nh3
from django.conf import settings
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.lexers._mapping import LEXERS
from pygments.token import STANDARD_TYPES

from . import code_guess
from .code_guess import guess_language
from .jsondepth import too_deep

__all__ = [
    "code_html",
    "guess_language",
    "message_html",
    "reply_part",
    "reply_sequence",
    "ReplyItem",
    "ReplyPart",
]

REL = "nofollow noopener noreferrer"
# a link's target must name its scheme and host: no relative link into this site, no
# protocol-relative //host, no javascript:, data:, vbscript:, file:...
_SAFE_URL = re.compile(r"(?:https?://[^/\\\s]|mailto:[^\s])", re.I)
# what a fence's info string may put in data-lang (the rest of it is dropped)
_LANG = re.compile(r"[\w+#.-]{1,40}")
# headings of the text sit below the page's own (h1 page, h2 panels, h3 "User" / "Model")
_DEMOTED = {"h1": "h4", "h2": "h5", "h3": "h6", "h4": "h6", "h5": "h6", "h6": "h6"}

_TAGS = {
    "div", "p", "br", "hr", "em", "strong", "s", "code", "pre", "span", "a", "ul", "ol",
    "li", "blockquote", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "pre": {"data-lang"},
    "ol": {"start"},
}
_CLASSES = {
    "span": {c for c in STANDARD_TYPES.values() if c} | {"link-target", "image"},
    "p": {"muted"},
    # a table column's alignment (_align_classes): a class, as the policy refuses inline styles
    "th": set(_ALIGN_CLASSES := ("align-left", "align-center", "align-right")),
    "td": set(_ALIGN_CLASSES),
}
_FORMATTER = HtmlFormatter(nowrap=True)
# a longer block (a log, a dump) is shown plain: highlighting it would cost the card seconds
HIGHLIGHT_LIMIT = 100_000
# every alias Pygments knows, read from its table (asking for an unknown name scans the
# installed plugins, a tenth of a second)
_KNOWN_LEXERS = {alias for _, _, aliases, _, _ in LEXERS.values() for alias in aliases}


def _clean(html: str) -> str:
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        allowed_classes=_CLASSES,
        url_schemes={"http", "https", "mailto"},
        url_relative="deny",
        link_rel=REL,
        # a code block may scroll sideways: the keyboard must reach it to scroll it
        set_tag_attribute_values={"pre": {"tabindex": "0"}},
        strip_comments=True,
    )


# --- code ----------------------------------------------------------------------------------


@lru_cache(maxsize=128)
def _lexer(name: str) -> Lexer | None:
    name = name.lower()
    if name not in _KNOWN_LEXERS:
        return None
    # lines are kept as written: no leading or trailing blank line dropped
    return get_lexer_by_name(name, stripnl=False, ensurenl=False)


def _code_html(code: str, lang: str) -> str:
    """One code block, not yet sanitized: highlighted by `lang` if Pygments knows it, else
    by the guessed language, else (or past HIGHLIGHT_LIMIT characters) plain. data-lang
    says the fence's language, else the guessed one (for CSS and tests; the code diff reads
    the raw text)."""
    word = lang if _LANG.fullmatch(lang) else ""
    lexer = _lexer(word) if word and len(code) <= HIGHLIGHT_LIMIT else None
    if lexer is None and len(code) <= HIGHLIGHT_LIMIT:
        guessed = guess_language(code)
        lexer = _lexer(guessed) if guessed else None
        word = word or guessed
    body = escape(code)
    if lexer is not None:
        # the formatter ends the last line with a newline the code did not have
        body = highlight(code, lexer, _FORMATTER)
        body = body if code.endswith("\n") else body.removesuffix("\n")
    return f'<pre data-lang="{escape(word)}"><code>{body}</code></pre>'


def code_html(code: str, lang: str = "") -> SafeString:
    """A code block on its own (a tool call's arguments, a tool's output), sanitized."""
    return mark_safe(f'<div class="md">{_clean(_code_html(code, lang))}</div>')


# --- Markdown ------------------------------------------------------------------------------


def _fence(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    info = token.info.strip().split(maxsplit=1)
    return _code_html(token.content.removesuffix("\n"), info[0] if info else "")


def _code_block(self, tokens, idx, options, env) -> str:
    return _code_html(tokens[idx].content.removesuffix("\n"), "")


def _link_close(self, tokens, idx, options, env) -> str:
    """Close the link and show its target, unless the link's text already is the target."""
    start = idx
    while tokens[start].type != "link_open":
        start -= 1
    href = tokens[start].attrGet("href") or ""
    text = "".join(t.content for t in tokens[start + 1 : idx] if t.type in ("text", "code_inline"))
    if text.strip() in (href, href.removeprefix("mailto:")):
        return "</a>"
    return f'</a> <span class="link-target">({escape(href)})</span>'


def _image(self, tokens, idx, options, env) -> str:
    """An image is never loaded: its alt text links to it, its URL shown beside."""
    token = tokens[idx]
    src = escape(token.attrGet("src") or "")
    alt = escape(self.renderInlineAsText(token.children or [], options, env)) or src
    return f'<span class="image">image: <a href="{src}">{alt}</a> ({src})</span>'


def _demote_headings(state) -> None:
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = _DEMOTED[token.tag]


def _align_classes(state) -> None:
    """A table cell's alignment as a class (align-left, -center, -right; cardsort.css) where
    markdown-it writes style="text-align:...": the Content-Security-Policy (style-src 'self')
    refuses inline styles, and the browser said so in its console."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open") and "style" in token.attrs:
            style = str(token.attrs.pop("style"))
            align = style.removeprefix("text-align:").strip().rstrip(";")
            if f"align-{align}" in _ALIGN_CLASSES:
                token.attrSet("class", f"align-{align}")


def _markdown() -> MarkdownIt:
    # chat text: a single newline is a line break (breaks), as the author saw it
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = lambda url: bool(_SAFE_URL.match(url))
    md.core.ruler.push("demote_headings", _demote_headings)
    md.core.ruler.push("align_classes", _align_classes)
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _code_block)
    md.add_render_rule("link_close", _link_close)
    md.add_render_rule("image", _image)
    return md


_MD = _markdown()


@lru_cache(maxsize=256)
def message_html(text: str) -> SafeString:
    """A message (user text, reply, system prompt) as sanitized HTML in a <div class="md">.
    Cached by text: the same turn is shown on the card, the discussion and the context."""
    if not text:
        return mark_safe("")
    return mark_safe(f'<div class="md">{_clean(_MD.render(text))}</div>')


# the fence languages coding conversations use most, beside those guessed (code_guess.py)
_COMMON_FENCES = ("python", "javascript", "typescript", "java", "c", "cpp", "csharp", "go",
                  "rust", "ruby", "php", "bash", "sql", "json", "html", "css", "yaml", "diff",
                  "kotlin", "swift")  # fmt: skip


def warm() -> None:
    """Load what the first card of each language would otherwise load, in a server process
    before it takes requests (config/wsgi.py): Pygments builds a lexer's class and compiles
    its rules on first use, 1 to 40 ms a language, about 0.3 s in all; each gunicorn worker
    paid it on the requests that first showed each language."""
    for alias in dict.fromkeys((*code_guess.languages(), *_COMMON_FENCES)):
        lexer = _lexer(alias)
        if lexer is not None:
            highlight("x = 1\n", lexer, _FORMATTER)
    _clean(_MD.render("*warm* `up`\n\n| a |\n|---|\n| b |\n"))


# --- a message past the display limit (annotation/messages.py) -----------------------------


def display_limit() -> int:
    return settings.CARDSORT_MESSAGE_DISPLAY_LIMIT


def cut(text: str) -> tuple[str, bool]:
    """The text as far as a page shows it, and whether it was cut."""
    limit = display_limit()
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def notice(total: int, url: str = "") -> SafeString:
    """What a cut message says under its shown part: how much is shown, and the link."""
    said = f"Shown: the first {display_limit():,} of {total:,} characters."
    if not url:
        return format_html('<p class="message-cut muted">{}</p>', said)
    return format_html(
        '<p class="message-cut muted">{} <a href="{}" data-full-text>Full text (plain)</a>'
        ' · <a href="{}">download</a></p>',
        said,
        url,
        url + ("&" if "?" in url else "?") + "download=1",
    )


# --- reply parts ---------------------------------------------------------------------------

_KINDS = {
    "tool_call": ("tool_call", "function_call", "tool_use", "server_tool_use", "custom_tool_call",
                  "local_shell_call"),
    "tool_result": ("tool_result", "function_call_output", "custom_tool_call_output",
                    "observation", "tool"),
    "thinking": ("thinking", "redacted_thinking", "reasoning", "agent_reasoning"),
}  # fmt: skip
# raw part kinds of the importers -> the kind (also what a quote of an episode names)
KIND_OF = {raw: kind for kind, raws in _KINDS.items() for raw in raws}
_LABELS = {"tool_call": "Tool call", "tool_result": "Tool result", "thinking": "Thinking"}
# what a call works on, in the order a reader looks for it
_SUBJECT_KEYS = ("command", "cmd", "file_path", "filePath", "path", "pattern", "query", "url")
SUMMARY_LENGTH = 100


@dataclass(frozen=True)
class ReplyPart:
    kind: str  # tool_call, tool_result, thinking or other
    label: str  # what the summary line calls it
    name: str  # the tool's name, "" if none
    summary: str  # one line: what it worked on, or its first line
    body: SafeString  # sanitized HTML


def _one_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(line) > SUMMARY_LENGTH:
        return line[: SUMMARY_LENGTH - 1].rstrip() + "…"
    return line


def _structured(value: Any) -> Any:
    """A JSON object or array given as text, parsed; anything else as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[") and not too_deep(value):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text_of(value: Any) -> str:
    """Content as text: blocks (Anthropic's [{"type": "text", "text": ...}]) by their text,
    an object as JSON."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if not isinstance(value, list):
        return str(value)
    lines = []
    for block in value:
        if isinstance(block, dict):
            text = block.get("text")
            lines.append(text if isinstance(text, str) else f"[{block.get('type', 'block')}]")
        else:
            lines.append(str(block))
    return "\n".join(lines)


def _data_html(value: Any) -> SafeString:
    """Structured data pretty-printed as JSON; text as code (its language guessed); either
    cut past the display limit."""
    if isinstance(value, dict | list) and not (value and _all_blocks(value)):
        return _cut_code(json.dumps(value, indent=2, ensure_ascii=False), "json")
    return _cut_code(_text_of(value))


def _cut_code(code: str, lang: str = "") -> SafeString:
    shown, was_cut = cut(code)
    html = code_html(shown, lang)
    return mark_safe(html + notice(len(code))) if was_cut else html


def _cut_message(text: str) -> SafeString:
    shown, was_cut = cut(text)
    html = message_html(shown)
    return mark_safe(html + notice(len(text))) if was_cut else html


def _all_blocks(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(b, dict) and "type" in b for b in value)


def _call_subject(arguments: Any) -> str:
    if isinstance(arguments, dict):
        for key in _SUBJECT_KEYS:
            value = arguments.get(key)
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return " ".join(value)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                return str(value)
        return json.dumps(arguments, ensure_ascii=False) if arguments else ""
    if isinstance(arguments, str):
        return arguments
    return "" if arguments is None else json.dumps(arguments, ensure_ascii=False)


def _first(part: dict, *keys: str) -> Any:
    return next((part[k] for k in keys if part.get(k) not in (None, "", [], {})), None)


def reply_part(part: dict) -> ReplyPart:
    """What the card shows of one reply part: kind, tool, one line, and the rendered body."""
    if not isinstance(part, dict):
        part = {"content": part}
    raw_kind = str(part.get("kind") or part.get("type") or "part")
    kind = KIND_OF.get(raw_kind, "other")
    label = _LABELS.get(kind, raw_kind[:40])
    if kind == "tool_result" and part.get("is_error") is True:
        label = "Tool error"
    name = str(part.get("name") or "")[:80]
    if kind == "tool_call":
        arguments = _structured(_first(part, "arguments", "input", "args", "command"))
        summary = _call_subject(arguments)
        if arguments is None:
            body = mark_safe('<p class="muted">(no arguments)</p>')
        else:
            body = _data_html(arguments)
    elif kind == "thinking":
        text = _text_of(_first(part, "thinking", "text", "content", "summary") or "")
        summary, body = text, _cut_message(text)
    else:
        raw = _first(part, "content", "output", "result", "text")
        if raw is None:
            summary, body = "", _data_html(part)
        else:
            summary, body = _text_of(raw), _data_html(_structured(raw))
    return ReplyPart(kind=kind, label=label, name=name, summary=_one_line(summary), body=body)


# --- the reply in order --------------------------------------------------------------------


@dataclass(frozen=True)
class ReplyItem:
    """One piece of a reply as it happened: a stretch of its text, or one of its parts."""

    text: str | None = None  # a stretch of Turn.reply_text
    part: dict | None = None  # one of Turn.reply_parts
    offset: int = 0  # where the stretch starts in Turn.reply_text (the quote key's hint)
    index: int | None = None  # a part's position in Turn.reply_parts (a quote's part_index)


def reply_sequence(turn) -> list[ReplyItem]:
    """A turn's reply as the log gave it: its text and its parts (tool calls, results,
    thinking) in the order they happened. The importer records where each piece of text
    falls among the parts in the turn's metadata (`reply_order`, importers/base.REPLY_ORDER:
    [[offset in reply_text, parts before it], ...]); without it the text comes first, then
    the parts. The pieces of text are the stored text's own stretches (no character lost
    but the blank line between two pieces)."""
    text = turn.reply_text or ""
    parts = [ReplyItem(part=p, index=i) for i, p in enumerate(turn.reply_parts or [])]
    order = _valid_order((turn.metadata or {}).get("reply_order"), len(text), len(parts))
    if not order:
        return ([ReplyItem(text=text)] if text else []) + parts
    items: list[ReplyItem] = []
    shown = 0
    for i, (offset, before) in enumerate(order):
        end = order[i + 1][0] if i + 1 < len(order) else len(text)
        items += parts[shown:before]
        shown = max(shown, before)
        piece = text[offset:end]
        if piece.endswith("\n\n") and i + 1 < len(order):
            piece = piece[:-2]
        if piece:
            items.append(ReplyItem(text=piece, offset=offset))
    return items + parts[shown:]


def _valid_order(order: Any, text_length: int, n_parts: int) -> list[tuple[int, int]]:
    """The recorded order if it is well formed (offsets rising from 0 within the text,
    part counts never falling and within the parts), else [] (the text first)."""
    if not isinstance(order, list) or not order:
        return []
    pairs = []
    for entry in order:
        if not (isinstance(entry, list | tuple) and len(entry) == 2):
            return []
        offset, before = entry
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (offset, before)):
            return []
        pairs.append((offset, before))
    offsets = [o for o, _ in pairs]
    counts = [b for _, b in pairs]
    if offsets[0] != 0 or offsets != sorted(set(offsets)) or offsets[-1] > text_length:
        return []
    if counts != sorted(counts) or counts[-1] > n_parts:
        return []
    return pairs
