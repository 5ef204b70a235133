"""Requests answered from their headers alone, before their body is read: a transfer
coding the parser does not undo, a body that is not plain JSON, an announced body over
the limit that waits for ``100 Continue``."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import Scope

__all__ = [
    "UNSUPPORTED_CONTENT_CODING", "EarlyRefusal", "early_refusal", "json_body_refusal",
    "refused_before_continue", "transfer_coding_refusal", "web_page_refusal",
]


UNSUPPORTED_CONTENT_CODING = "unsupported content-encoding: send the JSON body uncompressed"
"""The refusal of a compressed body (415)."""

# RFC 9110 section 12.5.3: a 415 for a content coding ought to list the codings taken,
# which tells it from a 415 for the media type (a client may then resend uncompressed).
_CODINGS_TAKEN = ((b"accept-encoding", b"identity"),)


def json_body_refusal(scope: Scope) -> str | None:
    """Why a request's body cannot be read as JSON from its headers, or ``None``.

    The body is JSON when ``content-type`` is absent (curl with ``--data-binary``,
    clients that send none) or names JSON (``application/json``,
    ``application/*+json``), as FastAPI decides for its own body parameters, and it
    is not compressed. Parsing a ``text/plain``, form or multipart body as JSON
    anyway would let any web page make a visitor's browser call the routes (those
    types are sent cross-site without a preflight), and a gzip body failed with a
    confusing "not valid UTF-8". A body of no content-type is sent cross-site without
    a preflight too (a ``fetch`` of a ``Blob``, ``sendBeacon``), so from a web page (it
    sent ``Origin``, which browsers add to every POST and programs do not) it is not
    taken for JSON either.
    """
    typed = from_page = False
    for name, value in scope["headers"]:
        if name == b"origin":
            from_page = True
        elif name == b"content-type":
            typed = True
            media = value.split(b";", 1)[0].strip().lower()
            main, _, sub = media.partition(b"/")
            if main != b"application" or not (sub == b"json" or sub.endswith(b"+json")):
                shown = media.decode("latin-1")[:64]
                if not shown.isprintable():
                    shown = "?"
                return f"unsupported content-type '{shown}': send 'application/json'"
        elif name == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
            return UNSUPPORTED_CONTENT_CODING
    if from_page and not typed:
        return ("a web page's body without content-type (it sent Origin): "
                "send 'application/json'")
    return None


def web_page_refusal(scope: Scope) -> tuple[int, str] | None:
    """Status and reason a worker refuses work a web page sent, or ``None``.

    Any page a browser opens can POST to a worker on 127.0.0.1 without a CORS
    preflight — text/plain, a form, or a body with no content-type at all — and its
    Host passes the Host check: a worker without a token did that work. Browsers name
    the page in ``Origin`` on every POST; the frontend's dispatch sends none, and JSON.
    """
    if any(name == b"origin" for name, _ in scope["headers"]):
        return 403, "a web page's request (it sent Origin): workers take work from a frontend"
    refusal = json_body_refusal(scope)
    return None if refusal is None else (415, refusal)


# Transfer codings the server undoes itself: chunked (the HTTP parser), and identity
# (no coding at all, as old clients still name it).
_KNOWN_TRANSFER_CODINGS = frozenset({b"chunked", b"identity"})


def transfer_coding_refusal(scope: Scope) -> str | None:
    """Why the request's ``transfer-encoding`` cannot be read, or ``None``.

    The HTTP parser undoes ``chunked`` only: for ``gzip, chunked`` it hands on the body
    still gzipped, which then failed as "invalid JSON body" (400). RFC 9112 (section
    6.1) asks for 501 Not Implemented for a transfer coding the server does not
    understand. A coding list that does not end in ``chunked`` is no framing at all:
    the server answers it 400 and closes (section 6.3; llhttp does, right after the
    headers, before the route runs), so it is left to the server here. Answered 501
    too, the route logged (and a worker's worker.refused said) an answer that went to
    the closed connection, never to the client.
    """
    codings: list[bytes] = []
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            codings += (coding.split(b";", 1)[0].strip().lower() for coding in value.split(b","))
    codings = [coding for coding in codings if coding]
    if not codings or codings[-1] != b"chunked":
        return None
    for coding in codings:
        if coding not in _KNOWN_TRANSFER_CODINGS:
            shown = coding.decode("latin-1")[:32]
            if not shown.isprintable():
                shown = "?"
            return (f"unsupported transfer-encoding '{shown}': "
                    "send the body chunked or with a content-length")
    return None


@dataclass(frozen=True)
class EarlyRefusal:
    """A request answered from its headers alone, its body left unread."""

    status: int
    message: str
    # The unread body may still come: the connection cannot carry another request.
    close: bool
    headers: tuple[tuple[bytes, bytes], ...] = ()

    @property
    def answer_headers(self) -> tuple[tuple[bytes, bytes], ...]:
        """The answer's headers: ``headers``, and ``Connection: close`` with ``close``."""
        return (*self.headers, (b"connection", b"close")) if self.close else self.headers


def early_refusal(scope: Scope, limit: int) -> EarlyRefusal | None:
    """What every route that reads a JSON body answers before reading it, or ``None``:
    501 for a transfer coding the parser does not undo (the client's fault though a
    5xx: the RFC's code), 415 for a body that is not plain JSON, 413 for an announced
    body over ``limit`` that waits for ``100 Continue``."""
    refusal = transfer_coding_refusal(scope)
    if refusal is not None:
        return EarlyRefusal(501, refusal, close=True)
    refusal = json_body_refusal(scope)
    if refusal is not None:
        coding = refusal == UNSUPPORTED_CONTENT_CODING
        return EarlyRefusal(415, refusal, close=False, headers=_CODINGS_TAKEN if coding else ())
    if refused_before_continue(scope, limit):
        return EarlyRefusal(413, f"request body exceeds {limit} bytes", close=True)
    return None


def refused_before_continue(scope: Scope, limit: int) -> bool:
    """True when the client waits for ``100 Continue`` before sending a body whose
    ``content-length`` is already over ``limit``.

    Answering 413 without the 100 spares it the upload (RFC 9110 §10.1.1); reading
    the body, as for any request, first sent it the 100 and then took up to the drain
    cap of bytes it did not want. The body is then never sent, so the connection
    cannot carry another request: the answer closes it.
    """
    expects = declared = False
    for name, value in scope["headers"]:
        if name == b"expect":
            expects = value.lower() == b"100-continue"
        elif name == b"content-length":
            declared = value.isdigit() and int(value) > limit
    return expects and declared
