"""Request targets uvicorn's httptools protocol mishandles (RFC 9112 section 3.2).

uvicorn hands any target llhttp reads to ``httptools.parse_url`` and takes its path:
a CONNECT's authority-form (``host:443``) does not parse and an absolute-form target
with an empty path (``http://host:8000``, which RFC 9112 section 3.2.2 reads as ``/``)
has no path, so both failed in a parser callback, a 400 that said only "Invalid HTTP
request received."; an absolute-form target of any scheme (``ftp://host/health``) was
served as its path, and the asterisk-form (``*``), which only OPTIONS may use, reached
the routes as the path ``/*``.
"""

from __future__ import annotations

import httptools

__all__ = [
    "host_from_target", "http10_framing_refusal", "target_refusal", "version_refusal",
    "with_root_path",
]

_WEB_SCHEMES = (b"http", b"https")
_SERVED_VERSIONS = ("1.0", "1.1")


def version_refusal(version: str) -> str | None:
    """Why a request line naming HTTP ``version`` is not served (505), or ``None``.

    llhttp also reads ``HTTP/2.0`` and ``HTTP/0.9`` (and a line with no version, 0.9's
    form): uvicorn answered them as HTTP/1.1, spans said version 2.0, and with no Host
    header (only 1.1 must send one) they passed the Host rule. HTTP/2 has no text
    request line, and a 0.9 client cannot read a status line (RFC 9112, section 2.3:
    a server may refuse a major version with 505)."""
    if version in _SERVED_VERSIONS:
        return None
    return f"HTTP/{version} is not served here: send HTTP/1.1 (RFC 9112, section 2.3)"


def target_refusal(method: bytes, target: bytes) -> str | None:
    """Why a request with this method and target cannot be served, or ``None``.

    The reasons are fixed phrases: the target's bytes are never repeated."""
    if method == b"CONNECT":
        return ("CONNECT asks a proxy for a tunnel; this server is not a proxy "
                "(RFC 9110, section 9.3.6)")
    if target == b"*" and method != b"OPTIONS":
        return "the asterisk-form target (*) is only for OPTIONS (RFC 9112, section 3.2.4)"
    if target.startswith(b"/") or target == b"*":
        return None
    try:
        parsed = httptools.parse_url(target)
    except httptools.HttpParserInvalidURLError:
        # llhttp read it (it refuses most malformed targets itself, saying why), but
        # not uvicorn's URL parser after it (an empty or bracket-less host, a port past
        # 65535): a 400 that said only "Invalid HTTP request received."
        return "the request target is not a valid URI (RFC 9112, section 3.2)"
    if parsed.schema is not None and parsed.schema.lower() not in _WEB_SCHEMES:
        return "an absolute request target must be an http or https URI (RFC 9110, section 4.2)"
    if parsed.userinfo is not None:
        # As a Host of u@h is a 400: credentials in the URI are an error to the
        # recipient, and this one was served (RFC 9110, section 4.2.4).
        return ("an http URI cannot carry user information (user@host): send credentials "
                "in a header (RFC 9110, section 4.2.4)")
    return None


def with_root_path(target: bytes) -> bytes:
    """An absolute-form target with its empty path read as ``/`` (RFC 9112 section
    3.2.2: ``http://host:8000?q`` is ``http://host:8000/?q``); any other as it is."""
    if target.startswith(b"/") or target == b"*":
        return target
    try:
        if httptools.parse_url(target).path is not None:
            return target
    except httptools.HttpParserInvalidURLError:
        return target
    head, mark, query = target.partition(b"?")
    return head + b"/" + mark + query


def host_from_target(target: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """RFC 9112 section 3.2.2: with an absolute-form target (``GET http://h/p``) the
    server MUST use the target's host and ignore Host: ``headers``' Host values become
    the target's authority. uvicorn keeps only the path, so the Host check judged the
    Host header: a request for another host was answered, and one naming this server
    with any Host refused (421)."""
    if target.startswith(b"/") or target == b"*":
        return
    try:
        parsed = httptools.parse_url(target)
    except httptools.HttpParserInvalidURLError:
        return
    if not parsed.host:
        return
    host = b"[" + parsed.host + b"]" if b":" in parsed.host else parsed.host
    authority = host if parsed.port is None else b"%s:%d" % (host, parsed.port)
    headers[:] = [(name, authority if name == b"host" else value) for name, value in headers]


def http10_framing_refusal(version: str, transfer_coded: bool) -> str | None:
    """Why an HTTP/1.0 request with a Transfer-Encoding header is refused (400), or None.

    HTTP/1.0 has no transfer codings: RFC 9112 section 6.1 says such a message MUST be
    treated as having faulty framing, even with a Content-Length. llhttp read its body
    as chunked, so it was served, framed as no 1.0 proxy in front of this server frames
    it: a way to smuggle a second request past that proxy."""
    if version != "1.0" or not transfer_coded:
        return None
    return ("an HTTP/1.0 request cannot have Transfer-Encoding: its framing is faulty "
            "(RFC 9112, section 6.1)")
