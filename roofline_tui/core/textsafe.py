"""The one sanitiser: strings from files made safe for a terminal, Markdown, SVG or JSON.

Every string that came from a file (kernel names, round directory names, a stored artifact's
fields, env_report values, peak-table sources) may hold bytes a terminal acts on: ESC
sequences (``ESC[2J`` clears the screen, ``ESC]52;…`` writes the clipboard, ``ESC]0;…`` sets
the title), raw C1 controls (``\\x9b`` is a one-byte CSI), bidirectional overrides (U+202E
shows text backwards), invisible format characters, and lone surrogates (valid as a JSON
escape, not encodable as UTF-8). Before any output they go through :func:`printable` (or
:func:`md_cell` inside a Markdown table), which shows each such character as a visible escape
(``\\x1b``, ``\\u202e``) and never passes it through.

:func:`valid_unicode` is for the input boundary (a name that must survive being written);
:func:`json_safe` for JSON text about to be written; :func:`escaped` keeps a reversible,
visible copy of an original for a note.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline are handled separately), DEL, C1, Arabic letter mark, zero-width
# and directional marks, line/paragraph separators, bidi embeddings/overrides/isolates and
# other invisible format characters, BOM, interlinear annotations, lone surrogates, tags.
_UNSAFE_CLASS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f"
)
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# characters json.dumps leaves raw that a terminal or an editor would act on
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                          "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")
_WHITESPACE_CONTROLS = str.maketrans({"\n": " ", "\t": " "})


def _plain(s: str) -> bool:
    """Printable ASCII only (U+0020-U+007E): nothing to escape, no pattern needed. Most names
    are, so most calls skip the regular expressions."""
    return s.isascii() and s.isprintable()


def _escape_char(ch: str) -> str:
    cp = ord(ch)
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _as_str(text: object) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="backslashreplace")
    try:
        return str(text)
    except Exception:  # a hostile __str__ must not break a message
        return f"<{type(text).__name__}>"


def printable(text: object, *, limit: int | None = None) -> str:
    """``text`` with every control, C1, bidi/format character and lone surrogate shown as a
    visible ``\\xNN``/``\\uNNNN`` escape; newlines and tabs become spaces.

    The result never makes a terminal do anything but print, and always encodes as UTF-8.
    ``limit`` cuts long strings with an ellipsis (the cut is applied before escaping too, so a
    megabyte-long name costs no more than a short one).
    """
    s = _as_str(text)
    if limit is not None and len(s) > limit:
        s = s[: limit + 1]
    if not _plain(s):
        s = _UNSAFE.sub(lambda m: _escape_char(m.group()), s.translate(_WHITESPACE_CONTROLS))
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 1)] + "…"
        # never leave half an escape sequence at the cut
        s = re.sub(r"\\(?:x[0-9a-f]{0,1}|u[0-9a-f]{0,3}|U[0-9a-f]{0,7})?…$", "…", s)
    return s


def md_cell(text: object, *, limit: int | None = None) -> str:
    """A string safe inside a markdown table cell: printable, pipes and backticks escaped."""
    return printable(text, limit=limit).replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def escaped(text: object, *, limit: int | None = 200) -> str:
    """A visible, reversible copy of an original string for a note: backslashes doubled, then
    every unsafe character (newline and tab included) escaped."""
    s = _as_str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit]
        cut = True
    else:
        cut = False
    s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    if not _plain(s):
        s = _UNSAFE.sub(lambda m: _escape_char(m.group()), s)
    return s + ("…" if cut else "")


def valid_unicode(text: str) -> str:
    """``text`` with each lone surrogate written as its visible escape (``\\ud800``): distinct
    originals stay distinct, and the result always encodes as UTF-8. For the input boundary."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: _escape_char(m.group()), text)


def _json_escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if 0xD800 <= cp <= 0xDFFF:
        return "\\ufffd"  # a lone surrogate is not a character: the replacement character
    if cp > 0xFFFF:
        v = cp - 0x10000
        return f"\\u{0xD800 + (v >> 10):04x}\\u{0xDC00 + (v & 0x3FF):04x}"
    return f"\\u{cp:04x}"


def json_safe(json_text: str) -> str:
    """JSON text from ``json.dumps(..., ensure_ascii=False)`` with the characters it leaves raw
    that a terminal acts on (DEL, C1, bidi, separators) written as ``\\uXXXX`` escapes and lone
    surrogates as U+FFFD. Those characters only ever occur inside JSON strings, where an escape
    means the same character, so the document's value is unchanged."""
    return _JSON_UNSAFE.sub(_json_escape, json_text)
