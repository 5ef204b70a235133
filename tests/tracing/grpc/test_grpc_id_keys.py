"""Id header names gRPC metadata cannot carry are refused when the settings are built.

One `TracingSettings` configures both transports: a name that works over HTTP broke
every gRPC call (a `-bin` key takes bytes) or never reached the caller (gRPC keeps
`grpc-*` keys for itself).
"""

from __future__ import annotations

import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor


@pytest.mark.parametrize(("setting", "name"), [
    ("response_id_header", "x-server-request-id-bin"),
    ("client_id_header", "x-request-id-bin"),
    ("response_id_header", "grpc-message"),
    ("client_id_header", "grpc-timeout"),
    # Valid HTTP field names outside gRPC's key alphabet: every call failed INTERNAL
    # ("Illegal header key") and was recorded OK.
    ("response_id_header", "x-server~id"),
    ("response_id_header", "x-server!id"),
    ("client_id_header", "x-request'id"),
])
def test_an_id_key_grpc_cannot_carry_is_refused(setting: str, name: str) -> None:
    # A `-bin` key takes bytes: every call hung to the client's deadline while its
    # request.end said OK; gRPC strips `grpc-*` keys: the server id never reached anyone.
    with pytest.raises(ValueError, match=setting):
        RequestTracingInterceptor(**{setting: name})
