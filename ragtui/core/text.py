"""Text from files is data: control characters are made visible before anything is drawn or printed.

Rich drops BEL but passes ESC, so a corpus document, a question, a slice or a file name holding
``ESC ] 52 ; …`` could otherwise write to the clipboard, retitle the window or clear the screen.
Every C0 control but tab and newline, DEL, every C1 control, and the bidirectional overrides that
can make text read differently from what it is, are shown as ``\\xNN`` / ``\\uNNNN`` escapes; a file
name's undecodable bytes (kept by Python as lone surrogates) show as ``\\xNN`` too.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

#: C0 but tab and newline, DEL, C1, the bidi embeddings/overrides/isolates, and lone surrogates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: The same, plus tab, newline and the other line breaks, for text that must stay on one line.
_CONTROL_ONE_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    """The visible form of one control character."""
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but tab and newline shown as an escape (never sent raw)."""
    return _CONTROL.sub(_escape, text)


def visible_line(text: str) -> str:
    """``text`` for one line: like ``visible``, and tabs and line breaks are escaped too."""
    return _CONTROL_ONE_LINE.sub(_escape, text)


#: A whole terminal escape sequence, 7-bit or 8-bit: CSI (``ESC [ 31 m``), OSC, DCS, SOS, PM and APC
#: strings up to their terminator (BEL or ST; unterminated: to the end), and two- or three-character
#: ``ESC`` sequences (``ESC c``, ``ESC ( B``).
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)


def without_escapes(text: str) -> str:
    """``text`` with every terminal escape sequence removed whole, its parameters too (a model's
    ``ESC[31mRED ESC[0m`` reads ``RED``, not ``[31mRED[0m``); other control characters are left to
    ``visible``."""
    return _ESCAPE_SEQUENCE.sub("", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def not_utf8(text: str) -> str | None:
    """What makes ``text`` impossible to write as UTF-8 (``byte 0xe9``: a byte of a command-line argument
    or file name that was not UTF-8, kept by Python as a lone surrogate), or None when it is valid."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"byte 0x{code - 0xDC00:02x}"
    return f"lone surrogate U+{code:04X}"


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character ``visible`` would escape."""
    return _CONTROL.search(text) is not None


#: A query or fragment parameter whose name says it holds a credential (``api_key``, ``token``, ``sig``...).
_CREDENTIAL_NAME = re.compile(r"key|token|secret|auth|pass|pwd|sig|credential|session|cookie", re.I)
#: A URL inside any text: a scheme, ``://`` and everything up to white space, a quote or an angle bracket
#: (a closing parenthesis or a full stop at the end is taken as the sentence's, not the URL's).
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*[^\s'\"<>`),.;:]")
#: Values kept as they are: placeholders (``{query}``, ``${VAR}``) hold no secret.
_PLACEHOLDER_VALUE = re.compile(r"\{[A-Za-z_]*\}|\$\{[A-Za-z_][A-Za-z0-9_]*\}")

#: What a masked secret is shown as.
MASK = "***"


def _mask_params(params: str) -> str:
    """``a=1&api_key=s3cret`` → ``a=1&api_key=***``: each value whose name says it is a credential."""
    masked = []
    for item in params.split("&"):
        name, eq, value = item.partition("=")
        if (
            eq
            and value
            and _CREDENTIAL_NAME.search(name)
            and not _PLACEHOLDER_VALUE.fullmatch(value)
        ):
            item = f"{name}={MASK}"
        masked.append(item)
    return "&".join(masked)


def mask_url(url: str) -> str:
    """``url`` safe to show: user info becomes ``***@`` and credential-like query values ``***``.

    ``https://elastic:pw@es:9200/_search?api_key=K&q={query}`` →
    ``https://***@es:9200/_search?api_key=***&q={query}``. Works on any text with ``://`` (a
    malformed URL is masked as far as it can be read, never refused); text without it is returned
    unchanged.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = f"{MASK}@{authority.rpartition('@')[2]}"
    before_fragment, hash_mark, fragment = tail.partition("#")
    path, question_mark, query = before_fragment.partition("?")
    if question_mark:
        query = _mask_params(query)
    if hash_mark and "=" in fragment:
        fragment = _mask_params(fragment)
    return f"{scheme}://{authority}{path}{question_mark}{query}{hash_mark}{fragment}"


#: A secret shorter than this is not masked (``ollama``, ``x``: placeholders, not secrets, and
#: replacing them would garble every message that holds the word).
MIN_SECRET = 8


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret (a key, a header's value, and each word of one, as the token of
    ``Bearer TOKEN``) of ``MIN_SECRET`` characters or more shown as ``***``: the one function that
    keeps the judges' keys and the live retrievers' header values out of every message."""
    words = {w for s in secrets for w in (s, *s.split()) if len(w) >= MIN_SECRET}
    for word in sorted(words, key=len, reverse=True):
        text = text.replace(word, MASK)
    return text


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1 or ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def plain_http_refusal(url: str, what: str, allowed: bool) -> str | None:
    """Why ``what`` (a key, a credential header) may not be sent to ``url``: plain ``http://`` to a
    host other than this machine, where anyone on the path reads it; None when it may be
    (``https``, loopback, or ``allowed``: ``--allow-http``)."""
    parts = urlsplit(url.strip())
    if allowed or parts.scheme.lower() != "http" or is_loopback(parts.hostname or ""):
        return None
    return (
        f"{what} would go over plain http:// to {parts.hostname}, where anyone on the path "
        "reads it: use https://, or say --allow-http (project key allow-http = true)"
    )


def mask_urls(text: str) -> str:
    """``text`` with every URL in it masked by :func:`mask_url` (for messages that quote a URL)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: mask_url(m.group()), text)
