"""The requests session every OTLP/HTTP export goes through (`tracing.otlp` builds the
exporters): which certificate authority is trusted, what a redirect answer means, and
what a collector's partial success says.

Left to the exporter library, a redirect was a delivery: it sends with redirects off
and takes any status below 400 for a success, so behind an ingress that sends http to
https (308), or a collector that moved, every span and metric was dropped while each
export reported success and nothing was logged. A redirect that keeps the request as
it is (307, 308) is followed, as HTTP says, and said once; one that would resend the
export as a GET (301, 302, 303), which no collector takes, fails the export with its
status and where it pointed.

Nor did the library read a successful answer's body: what a collector's partial
success says is read here and logged (`tracing.otlp_partial`). A 2xx answer that is an
HTML page comes from no OTLP receiver (the endpoint names Jaeger's UI port, 16686, or a
web server, which answer any POST with their page): it was counted as delivered while
everything was dropped. It now fails the export, and each exporter says so once; so
does a 2xx answer in JSON that is no OTLP answer (a web API's ``{"status": "ok"}``). An
OTLP answer in JSON is one still, its partial success read as well.
"""

from __future__ import annotations

import http.client
import json
import logging
from typing import Any

import requests

from ridtrace.tracing.otlp_endpoints import shown_endpoint
from ridtrace.tracing.otlp_partial import say_partial_success

__all__ = ["NotAnOtlpReceiver", "UnfollowedRedirect", "export_session"]

# Redirects after which an export gives up (requests' own default is 30).
_MAX_REDIRECTS = 5
# The redirects that resend the same method and body (RFC 9110 15.4.8, 15.4.9).
_KEEPING_THE_REQUEST = frozenset({307, 308})


class UnfollowedRedirect(requests.RequestException):
    """A collector's redirect answer that an export cannot follow: the exporter logs it
    as the export's failure (it is no connection error, so it is not retried)."""


class NotAnOtlpReceiver(requests.RequestException):
    """A 2xx answer in HTML, or in JSON that is no OTLP answer, or HTTP/2 frames (a gRPC
    port): no OTLP/HTTP receiver answers so. Failed as :class:`UnfollowedRedirect` is,
    not retried."""


def export_session(
    signal: str, ca_file: str | None, credential_headers: frozenset[str]
) -> requests.Session:
    """The session for one OTLP/HTTP exporter of ``signal`` (``traces``, ``metrics``).

    ``ca_file``: the ``OTEL_EXPORTER_OTLP_[SIGNAL_]CERTIFICATE`` the exporter verifies
    against, which then wins over ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` (requests
    let those win over a session's own ``verify``, and every https export to a collector
    behind a private CA failed "certificate verify failed").
    ``credential_headers``: the names ``OTEL_EXPORTER_OTLP_[SIGNAL_]HEADERS`` set, kept
    from a redirect to another host as requests keeps ``authorization`` from it.
    """
    return _ExportSession(signal, ca_file, credential_headers)


class _ExportSession(requests.Session):
    def __init__(
        self, signal: str, ca_file: str | None, credential_headers: frozenset[str]
    ) -> None:
        super().__init__()
        self.max_redirects = _MAX_REDIRECTS
        self._signal = signal
        self._ca_file = ca_file
        self._credential_headers = credential_headers
        self._redirect_said = False
        self._not_a_receiver_said = False

    def merge_environment_settings(self, *args: Any, **kwargs: Any) -> Any:
        settings = super().merge_environment_settings(*args, **kwargs)
        if self._ca_file and isinstance(self.verify, str):
            settings["verify"] = self.verify
        return settings

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs["allow_redirects"] = True  # the exporter asks for none
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.ConnectionError as error:
            if not _http2_frames(error):
                raise
            # An OTLP/gRPC port (4317) under http/protobuf answers HTTP/2 frames: the
            # exporter took that for a transient error and retried every batch until its
            # timeout, logging the frames' bytes, never what the port is.
            shown = shown_endpoint(str(url))
            if not self._not_a_receiver_said:
                self._not_a_receiver_said = True
                logging.getLogger(__name__).warning(
                    "OTLP endpoint %s answered with HTTP/2 frames, as an OTLP/gRPC port (4317) "
                    "does: no %s reach a collector; name its OTLP/HTTP port (4318), or set "
                    "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", shown, self._signal)
            raise NotAnOtlpReceiver(f"OTLP endpoint {shown} answered with HTTP/2 frames (an "
                                    "OTLP/gRPC port), not OTLP/HTTP") from None
        if 300 <= response.status_code < 400:  # still a redirect, or one with no Location
            raise UnfollowedRedirect(_unfollowed(response))
        if response.history and not self._redirect_said:
            self._redirect_said = True
            logging.getLogger(__name__).warning(
                "OTLP endpoint %s answers %s, a redirect to %s: each export is sent twice; "
                "name that URL in the endpoint variable", shown_endpoint(str(url)),
                response.history[0].status_code, shown_endpoint(response.url))
        if 200 <= response.status_code < 300:
            if _is_html(response):
                self._say_not_a_receiver(response, "an HTML page (text/html)",
                                         "Jaeger's UI port 16686, or a web server?")
                raise NotAnOtlpReceiver(
                    f"OTLP endpoint {shown_endpoint(response.url)} answered "
                    f"{response.status_code} with an HTML page, not an OTLP answer")
            if _media_type(response) == "application/json":
                self._read_json_answer(response)
            elif not _say_partial_success(self._signal, response):
                # Counted as delivered, while whatever answered took none: the gRPC
                # exporter fails such an answer, with a traceback a second.
                self._say_not_a_receiver(response, "protobuf that is no OTLP answer",
                                         "a proxy's own answer, or another service?")
                raise NotAnOtlpReceiver(
                    f"OTLP endpoint {shown_endpoint(response.url)} answered "
                    f"{response.status_code} with protobuf that is no OTLP answer")
        return response

    def _read_json_answer(self, response: Any) -> None:
        # The exporter sends protobuf, which a receiver answers in protobuf; some answer
        # JSON anyway, an OTLP answer still. JSON that is none (`{"status": "ok"}`, an
        # API's, an echo service's) was counted as delivered while all was dropped.
        if not response.content.strip():
            return
        from google.protobuf import json_format

        answer = _answer_type(self._signal)()
        try:
            document = json.loads(response.content)
            if not isinstance(document, dict):  # the parser below takes `[]` for `{}`
                raise ValueError("no JSON object")
            # OTLP/JSON readers ignore fields they do not know (a receiver's `requestId`
            # beside its `partialSuccess`, a newer field inside it); an object with
            # fields and none of an answer's is some other service's.
            known = {f.json_name for f in answer.DESCRIPTOR.fields}
            known |= {f.name for f in answer.DESCRIPTOR.fields}
            if document and not known & document.keys():
                raise ValueError("no field of an OTLP answer")
            json_format.ParseDict(document, answer, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError, RecursionError):
            self._say_not_a_receiver(response, "JSON that is no OTLP answer",
                                     "a web API, or a proxy's own answer?")
            raise NotAnOtlpReceiver(
                f"OTLP endpoint {shown_endpoint(response.url)} answered "
                f"{response.status_code} with JSON that is no OTLP answer") from None
        say_partial_success(self._signal, response.url, answer)

    def _say_not_a_receiver(self, response: Any, what: str, guess: str) -> None:
        # Once per exporter: each export fails with its own ERROR line anyway.
        if self._not_a_receiver_said:
            return
        self._not_a_receiver_said = True
        logging.getLogger(__name__).warning(
            "OTLP endpoint %s answered %s with %s: it is not an OTLP receiver (%s), and no "
            "%s reach a collector; name the collector's OTLP/HTTP port (4318) in the "
            "endpoint variable",
            shown_endpoint(response.url), response.status_code, what, guess, self._signal)

    def rebuild_method(self, prepared_request: Any, response: Any) -> None:
        # requests turns a POST into a GET for these, as browsers do: no collector
        # takes an export so, and the body would be gone.
        if response.status_code not in _KEEPING_THE_REQUEST:
            raise UnfollowedRedirect(_unfollowed(response))
        super().rebuild_method(prepared_request, response)

    def rebuild_auth(self, prepared_request: Any, response: Any) -> None:
        super().rebuild_auth(prepared_request, response)
        # requests drops only `authorization` when a redirect leaves the host; an
        # OTLP header is as often a credential (x-api-key, a tenant's token).
        if self.should_strip_auth(response.request.url, prepared_request.url):
            for name in self._credential_headers:
                prepared_request.headers.pop(name, None)


def _http2_frames(error: BaseException) -> bool:
    """Whether ``error`` is an answer that opens with an HTTP/2 SETTINGS frame (a length
    of 3 bytes, then type 4): what a gRPC server sends, read as an HTTP/1.1 status line."""
    found: list[BaseException] = [error]
    while found:
        cause = found.pop()
        if isinstance(cause, http.client.BadStatusLine):
            line = str(cause.args[0]) if cause.args else ""
            return len(line) > 3 and line[:2] == "\x00\x00" and line[3] == "\x04"
        found.extend(a for a in cause.args if isinstance(a, BaseException))
    return False


def _media_type(response: Any) -> str:
    return str(response.headers.get("content-type", "").partition(";")[0].strip().lower())


def _is_html(response: Any) -> bool:
    return _media_type(response) == "text/html"


def _answer_type(signal: str) -> Any:
    if signal == "traces":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        return ExportTraceServiceResponse
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceResponse,
    )

    return ExportMetricsServiceResponse


def _say_partial_success(signal: str, response: Any) -> bool:
    """Read a successful answer for its partial success (`tracing.otlp_partial`); False
    for protobuf that does not decode as the signal's answer. The protocol answers
    protobuf with protobuf; JSON is read by the session, and an answer in any other
    form is left unread."""
    if not response.headers.get("content-type", "").startswith("application/x-protobuf"):
        return True
    from google.protobuf.message import DecodeError

    try:
        answer = _answer_type(signal).FromString(response.content)
    except DecodeError:
        return False
    say_partial_success(signal, response.url, answer)
    return True


def _unfollowed(response: Any) -> str:
    location = response.headers.get("location") or "nowhere"
    return (f"OTLP endpoint {shown_endpoint(response.request.url)} answered "
            f"{response.status_code} {response.reason}, a redirect to "
            f"{shown_endpoint(location)} that an export cannot follow: name the URL "
            "the collector takes in the endpoint variable")
