"""Escaping of what comes from the scanned tree (file names, source text, comments), one
function per kind of output, used by every reporter.

A scanned tree is untrusted input: a file may be named `x\\n::error ...::...`, hold bytes that
are not UTF-8 (`bad\\xff.py`, decoded with `surrogateescape`), an escape sequence, a backtick
or HTML. Each report shows such text escaped for its own format and never lets it act:

- `display`: control characters, lone surrogates (a file name's undecodable bytes) and
  invisible direction or line controls shown as `\\xNN`/`\\uNNNN`, so text never spans lines,
  moves the terminal's cursor or reorders what is shown; the base of every other function;
- `line_start`: `display`, and a `::`, `##[` or `##vso[` that would open the line (GitHub's
  and Azure's log commands, which CI logs run) shown as `\\x3a:`/`\\x23#`;
- `workflow_data`, `workflow_property`: GitHub workflow-command escaping;
- `md_code`, `md_text`, `md_fence`: Markdown code spans whose fence is longer than any
  backtick run, and prose with HTML, links and autolinks made literal;
- `html`: HTML (and XML) text and attribute values; `xml_chars` for whatever else goes into
  an XML document;
- `uri`: percent-encoded URI references of paths (SARIF), from the name's bytes;
- `unicode_safe`, `path_fields`: JSON values that are valid Unicode, and a path's bytes
  alongside where its name is not UTF-8."""

from __future__ import annotations

import os
import re
from typing import Any

# Invisible characters that change what a reader sees: direction controls ("Trojan Source")
# and separators that end lines; U+FFFE/U+FFFF are not characters (and not XML).
_INVISIBLE = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    "\ufeff\ufffe\uffff"
)
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # `surrogateescape`: the byte that was not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


# Patterns are compiled on first use (re caches them): a report uses a few of them.
_ESCAPED = "[\x00-\x1f\x7f-\x9f\ud800-\udfff" + "".join(sorted(_INVISIBLE)) + "]"


def display(text: str) -> str:
    """`text` with every character that is not plainly visible escaped (see the module doc)."""
    if text.isprintable():  # the usual case: every character escaped is of a category it is not
        return text
    return re.sub(_ESCAPED, lambda m: _escape_char(m.group()), text)


# How CI logs recognise a command line, after leading blanks: GitHub Actions' `::name` and its
# older `##[name]`, Azure Pipelines' `##vso[name]`.
_LOG_COMMAND = r"(?i)::|##(?:vso)?\["


def line_start(text: str) -> str:
    """`display(text)` for text that may start an output line: a log command's opening (`::`,
    `##[`, `##vso[`) after leading blanks is escaped."""
    shown = display(text)
    body = shown.lstrip()  # any blank, as the runners trim them
    if re.match(_LOG_COMMAND, body):
        cut = len(shown) - len(body)
        return shown[:cut] + f"\\x{ord(body[0]):02x}" + body[1:]
    return shown


# ---------------------------------------------------------------------------------------------
# GitHub workflow commands


def workflow_data(text: str) -> str:
    """The message part of a workflow command (`::error ...::MESSAGE`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value (`file=VALUE`): it also ends at `,` and `:`."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


# ---------------------------------------------------------------------------------------------
# Markdown (GitHub's: CommonMark with the table and autolink extensions)

_BACKTICKS = r"`+"


def _longest_run(text: str, char: str = "`") -> int:
    return max((len(m) for m in re.findall(re.escape(char) + "+", text)), default=0)


def md_code(text: str, *, table: bool = False) -> str:
    """A code span showing `display(text)` literally: the fence is one backtick longer than
    any run inside, and padded where the content starts or ends with a backtick or a blank
    (CommonMark strips one blank each side). In a table cell `|` is escaped too (GFM splits
    cells before it reads code spans)."""
    content = display(text)
    if table:
        content = content.replace("|", "\\|")
    if not content:
        return "` `"
    fence = "`" * (_longest_run(content) + 1)
    pad = content[0] == "`" or content[-1] == "`" or (content[0] == " " == content[-1])
    if pad and content.strip(" "):
        content = f" {content} "
    return f"{fence}{content}{fence}"


# What opens an inline construct in prose: a backslash escape, a backtick, a link or image
# bracket, raw HTML or an autolink (`<` before a letter, `/`, `!` or `?`), an entity (`&`
# before a letter, a digit or `#`), and GFM's extended autolinks (`scheme://`, `www.`).
_PROSE = r"[\\`\[\]]|<(?=[A-Za-z/!?])|&(?=[A-Za-z0-9#])|:(?=//)|(?<![\w.])www\."
_PROSE_TABLE = _PROSE + r"|\|"
_REPLACE = {"<": "&lt;", "&": "&amp;", "www.": "www\\."}
# A line that starts a block (heading, quote, list, thematic break, setext underline).
_BLOCK_START = r"(?:[#>+*=~_-]|\d+[.)])"


def _prose(text: str, table: bool) -> str:
    return re.sub(
        _PROSE_TABLE if table else _PROSE, lambda m: _REPLACE.get(m.group(), "\\" + m.group()), text
    )


def md_text(text: str, *, table: bool = False, block: bool = False) -> str:
    """Prose holding code spans (`a message quoting `code``), shown as written and acting as
    nothing else: each code span is re-fenced with `md_code` (CommonMark's pairing: a run of
    backticks closes at the next run of the same length), a backtick that closes nothing is
    escaped, and the prose around them escapes what would open HTML, a link or an autolink.
    `block`: the text opens a line, so a leading block marker or log command is escaped too."""
    shown = display(text)
    out: list[str] = []
    runs = list(re.finditer(_BACKTICKS, shown))
    position = 0
    index = 0
    while index < len(runs):
        run = runs[index]
        closer = next(
            (j for j in range(index + 1, len(runs)) if len(runs[j].group()) == len(run.group())),
            None,
        )
        if closer is None:
            index += 1
            continue
        content = shown[run.end() : runs[closer].start()]
        if content[:1] == " " == content[-1:] and content.strip(" "):
            content = content[1:-1]  # what CommonMark strips; md_code pads again if needed
        out.append(_prose(shown[position : run.start()], table))
        out.append(md_code(content, table=table))
        position = runs[closer].end()
        index = closer + 1
    out.append(_prose(shown[position:], table))
    joined = "".join(out)
    if block:
        joined = joined.lstrip(" ")
        match = re.match(_BLOCK_START, joined)
        body = joined.lstrip()
        if match:
            marker = match.end() - 1
        elif re.match(_LOG_COMMAND, body):  # after other blanks: still a CI log command
            marker = len(joined) - len(body)
        else:
            return joined
        joined = joined[:marker] + "\\" + joined[marker:]
    return joined


def md_fence(lines: list[str], info: str = "") -> list[str]:
    """A fenced code block of `lines` (already escaped for display), its fence longer than any
    backtick run in them, so no line can close it."""
    fence = "`" * max(3, max((_longest_run(line) for line in lines), default=0) + 1)
    return [fence + info, *lines, fence]


# ---------------------------------------------------------------------------------------------
# HTML and XML

# XML 1.0 allows #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF.
_NOT_XML = "[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]"


def html(text: str) -> str:
    """HTML (or XML) text or a quoted attribute value showing `display(text)`."""
    import html as _html  # (loaded by the formats that use it only)

    return _html.escape(display(text), quote=True)


def xml_chars(text: str) -> str:
    """`text` with the characters XML 1.0 cannot hold shown escaped (the rest as it is)."""
    if text.isascii() and text.isprintable():
        return text
    return re.sub(_NOT_XML, lambda m: _escape_char(m.group()), text)


# ---------------------------------------------------------------------------------------------
# URIs and JSON


def _name_bytes(path: str) -> bytes:
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:  # a lone surrogate that no POSIX name decodes to
        return path.encode("utf-8", "surrogatepass")


def uri(path: str) -> str:
    """A percent-encoded URI of `path` from its bytes: `file://...` when absolute, else a
    relative reference (every byte but unreserved characters and `/` encoded, so a `:` in the
    first segment cannot read as a scheme)."""
    from pathlib import PureWindowsPath
    from urllib.parse import quote_from_bytes

    if os.path.isabs(path) and os.name == "nt":
        return PureWindowsPath(path).as_uri()
    encoded = quote_from_bytes(_name_bytes(path.replace(os.sep, "/")), safe="/")
    return "file://" + encoded if os.path.isabs(path) else encoded


_SURROGATE = "[\ud800-\udfff]"


def _has_surrogates(text: str) -> bool:
    return not text.isascii() and re.search(_SURROGATE, text) is not None


def _unicode(text: str) -> str:
    if not _has_surrogates(text):
        return text
    return re.sub(_SURROGATE, lambda m: _escape_char(m.group()), text)


def unicode_safe(value: Any) -> Any:
    """A JSON value whose strings are valid Unicode: a lone surrogate (an undecodable byte of
    a file name) is shown `\\xNN`; everything else is kept as it is (JSON escapes controls)."""
    if isinstance(value, str):
        return _unicode(value)
    if isinstance(value, dict):
        return {_unicode(str(k)): unicode_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unicode_safe(v) for v in value]
    return value


def path_fields(path: str | None, key: str = "path") -> dict[str, Any]:
    """`{key: path}` for a JSON report, valid Unicode; where the name is not UTF-8 it is shown
    escaped and `{key}_uri` keeps its bytes, percent-encoded as in SARIF."""
    if path is None or not _has_surrogates(path):
        return {key: path}
    return {key: _unicode(path), f"{key}_uri": uri(path)}
