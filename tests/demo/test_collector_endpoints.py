"""What `ridtrace demo` says about the collector its OTEL_* variables name (docs/jaeger.md)."""

from __future__ import annotations

import os

import pytest

from ridtrace.cli.demo import _traces_endpoint
from tests.support.otlp_receiver import answering_json, otlp_receiver, web_page_server
from tests.support.servers import free_port

_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
              "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
              "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
              "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SDK_DISABLED")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    # What _traces_endpoint sets itself is undone by tests/conftest.py's own environment.
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(("variable", "path", "meant"), [
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "/v1/traces"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "/v1/traces", ""),
])
def test_an_endpoint_one_path_off_is_named_not_called_traceless(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    variable: str, path: str, meant: str,
) -> None:
    # The signal's own variable is used as it is, so Jaeger's base URL there sends every
    # export to "/"; the shared one gets /v1/traces added, so its whole URL there sends
    # them to /v1/traces/v1/traces. Both 404: the demo said "it takes no traces (as
    # Jaeger)" and advised OTEL_TRACES_EXPORTER=none, where the URL was one path off.
    with otlp_receiver(metrics=False) as receiver:
        clean_env.setenv(variable, receiver.endpoint + path)
        clean_env.setenv("OTEL_METRICS_EXPORTER", "none")
        assert _traces_endpoint() is None
    said = capsys.readouterr().err
    assert said.count("\n") == 1, said
    assert said.startswith(f"ridtrace demo: {receiver.endpoint}{path}"), said
    assert f"{variable} " in said and f"set it to {receiver.endpoint}{meant})" in said, said
    assert "takes no traces" not in said and "EXPORTER=none" not in said, said


def test_a_collector_without_a_metrics_pipeline_is_still_said_to_take_none(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with otlp_receiver(metrics=False) as receiver:
        clean_env.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", receiver.endpoint + "/v1/metrics")
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
        assert _traces_endpoint() == receiver.endpoint + "/v1/traces"
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "it takes no metrics (as Jaeger)" in said, said


@pytest.mark.extra("grpc")
@pytest.mark.parametrize("scheme", ["", "http://"])
def test_a_plaintext_grpc_collector_named_without_a_scheme_is_said_to_need_one(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], scheme: str
) -> None:
    # Over grpc an endpoint without a scheme (collector:4317) is a TLS channel: every
    # export failed its handshake on Jaeger's plaintext port, the terminal filled with
    # SSL errors, no span arrived, and the demo said "spans were exported to ...".
    from tests.support.otlp_receiver import otlp_grpc_receiver

    with otlp_grpc_receiver() as receiver:
        endpoint = f"{scheme}127.0.0.1:{receiver.port}"
        clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        clean_env.setenv("OTEL_METRICS_EXPORTER", "none")
        exported_to = _traces_endpoint()
    said = capsys.readouterr().err
    if scheme:  # the plaintext channel it names: nothing to say, the spans go
        assert exported_to == endpoint and not said, said
    else:
        assert exported_to is None, exported_to  # not "spans were exported to ..."
        assert said.count("\n") == 1 and "does not speak TLS" in said, said
        assert f"name it http://{endpoint}" in said, said


@pytest.mark.extra("grpc")
def test_a_grpc_collector_without_a_metrics_service_is_said_once_and_traces_still_go(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Jaeger over gRPC (4317) has no metrics service: every process of both runs logged
    # "Failed to export metrics … UNIMPLEMENTED" as an ERROR, and the demo, which checked
    # this over HTTP only, said nothing.
    from tests.support.otlp_receiver import otlp_grpc_receiver

    with otlp_grpc_receiver(metrics=False) as receiver:
        clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        assert _traces_endpoint() == receiver.endpoint
    said = capsys.readouterr().err
    assert said.count("\n") == 1, said
    assert "has no OTLP metrics service" in said and "metrics are not exported" in said, said
    assert os.environ["OTEL_METRICS_EXPORTER"] == "none"


def test_nothing_answering_for_metrics_names_the_way_jaeger_needs(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Jaeger not started, OTEL_METRICS_EXPORTER left unset: both signals said "start
    # Jaeger first". Jaeger started, the next run said its metrics answer 404: the advice
    # for metrics led to a second failed run, where docs/jaeger.md says to turn them off.
    endpoint = f"http://127.0.0.1:{free_port()}"  # a loopback port nothing listens on
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    assert _traces_endpoint() is None
    metrics, traces = capsys.readouterr().err.splitlines()
    assert f"nothing answers at {endpoint}/v1/metrics" in metrics
    assert "set OTEL_METRICS_EXPORTER=none" in metrics and "Jaeger" in metrics, metrics
    assert traces.endswith("(start Jaeger first: docs/jaeger.md)"), traces


def test_credentials_in_an_endpoint_are_never_printed(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A hosted collector's URL may carry a token in its userinfo or query. The demo
    # printed the endpoint verbatim ("nothing answers at …", "spans were exported to …"),
    # so the token reached the terminal and every CI log of the run.
    closed = f"http://user:s3cret@127.0.0.1:{free_port()}"  # nothing listens there
    clean_env.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", closed + "/v1/metrics?token=t0ken")
    with otlp_receiver(metrics=False) as receiver:
        host = receiver.endpoint.partition("://")[2]
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                         f"http://user:s3cret@{host}/v1/traces?token=t0ken")
        shown = _traces_endpoint()
    said = capsys.readouterr().err
    assert "nothing answers at http://***@127.0.0.1:" in said and "/v1/metrics?…" in said, said
    assert shown == f"http://***@{host}/v1/traces?…"  # what "spans were exported to" shows
    assert "s3cret" not in said + shown and "t0ken" not in said + shown, said


def test_credentials_in_a_refused_endpoint_are_never_printed(
    clean_env: pytest.MonkeyPatch,
) -> None:
    from ridtrace.cli.serve_options import BadConfiguration

    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "user:s3cret@collector:4318?key=t0ken")
    with pytest.raises(BadConfiguration) as refused:
        _traces_endpoint()
    said = str(refused.value)
    assert "***@collector:4318?…" in said and "s3cret" not in said and "t0ken" not in said, said


def test_a_web_page_named_as_the_collector_is_said_not_called_exported(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Jaeger's UI port (16686), the URL a user has open, answers every POST 200 with its
    # page: the probe saw no 404 and kept the endpoint, every process of both runs logged
    # "it is not an OTLP receiver" and failed each export, and the demo still ended with
    # "spans were exported to …: in Jaeger search tags …".
    with web_page_server() as page:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", page)
        assert _traces_endpoint() is None
    metrics, traces = capsys.readouterr().err.splitlines()
    for signal_name, said in (("metrics", metrics), ("traces", traces)):
        assert said.startswith(f"ridtrace demo: {page}/v1/{signal_name} answers with an "
                               "HTML page, it is not an OTLP receiver"), said
        assert f"{signal_name} are not exported this run" in said, said
        assert "4318" in said and "docs/jaeger.md" in said, said
    assert os.environ["OTEL_TRACES_EXPORTER"] == "none"


def test_a_web_page_named_with_credentials_is_said_not_called_exported(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The probe handed `user:token@host` to urllib, which took it all for the host name:
    # no answer, so every check kept the endpoint, the exports all failed, and the demo
    # said "spans were exported to http://***@…".
    with web_page_server() as page:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", page.replace("://", "://user:s3cret@"))
        assert _traces_endpoint() is None
    said = capsys.readouterr().err
    shown = page.replace("://", "://***@")
    for signal_name in ("metrics", "traces"):
        assert (f"ridtrace demo: {shown}/v1/{signal_name} answers with an HTML page, it is "
                "not an OTLP receiver") in said, said
    assert "s3cret" not in said


def test_a_redirect_an_export_cannot_follow_is_said_not_called_exported(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An ingress sending http to https with a 302: the probe followed it as a GET, saw no
    # 404 and kept the endpoint; every export failed with an ERROR naming the redirect,
    # and the demo still ended with "spans were exported to …".
    from tests.support.otlp_receiver import redirecting_collector

    with otlp_receiver(metrics=False) as receiver, \
            redirecting_collector(receiver.endpoint, status=302) as moved:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", moved)
        clean_env.setenv("OTEL_METRICS_EXPORTER", "none")
        assert _traces_endpoint() is None
    said = capsys.readouterr().err
    assert said.count("\n") == 1, said
    assert said.startswith(f"ridtrace demo: {moved}/v1/traces answers 302, a redirect an "
                           "export cannot follow: traces are not exported this run"), said
    assert f"name where it points, {receiver.endpoint}/v1/traces)" in said, said



def test_a_json_api_named_as_the_collector_is_said_not_called_exported(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A web API answers every POST 200 with JSON of its own: every process failed each
    # export ("it is not an OTLP receiver"), and the demo still ended with "spans were
    # exported to …: in Jaeger search tags …".
    with answering_json(b'{"status": "ok", "id": 7}') as api:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", api)
        assert _traces_endpoint() is None
    metrics, traces = capsys.readouterr().err.splitlines()
    for signal_name, said in (("metrics", metrics), ("traces", traces)):
        assert said.startswith(f"ridtrace demo: {api}/v1/{signal_name} answers with JSON "
                               "that is no OTLP answer, it is not an OTLP receiver"), said
        assert f"{signal_name} are not exported this run" in said, said


def test_an_otlp_answer_in_json_keeps_the_collector(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with answering_json(b'{"partialSuccess": {}}') as collector:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
        assert _traces_endpoint() == collector + "/v1/traces"
    assert not capsys.readouterr().err


@pytest.mark.extra("grpc")
def test_an_otlp_grpc_port_named_for_otlp_http_is_said_not_a_traceback(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Jaeger's 4317 under the default http/protobuf: it answers the probe's HTTP/1.1
    # POST with HTTP/2 frames, and the demo ended in a BadStatusLine traceback and
    # "internal error (exit 4)".
    from tests.support.otlp_receiver import otlp_grpc_receiver

    with otlp_grpc_receiver() as receiver:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        assert _traces_endpoint() is None
    metrics, traces = capsys.readouterr().err.splitlines()
    for signal_name, said in (("metrics", metrics), ("traces", traces)):
        assert said.startswith(f"ridtrace demo: {receiver.endpoint}/v1/{signal_name} gives no "
                               "HTTP/1.1 answer, as an OTLP/gRPC port does"), said
        assert f"{signal_name} are not exported this run" in said, said
        assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in said, said


@pytest.mark.extra("grpc")
def test_an_otlp_http_port_named_for_otlp_grpc_is_said_not_called_exported(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # OTEL_EXPORTER_OTLP_PROTOCOL=grpc with the collector's 4318: every export failed
    # UNAVAILABLE after its retries, and the demo still said the spans were exported.
    with otlp_receiver() as receiver:
        clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        assert _traces_endpoint() is None
    metrics, traces = capsys.readouterr().err.splitlines()
    for signal_name, said in (("metrics", metrics), ("traces", traces)):
        assert said.startswith(f"ridtrace demo: {receiver.endpoint} answers HTTP/1.1, as an "
                               "OTLP/HTTP port does, not gRPC"), said
        assert f"{signal_name} are not exported this run" in said, said
        assert "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf" in said, said


def test_a_server_that_takes_no_post_is_said_not_called_exported(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `python -m http.server` answers every POST 501: every export failed, and the demo
    # still ended with "spans were sent to …: in Jaeger search tags request_id=…".
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass  # its request lines on stderr are not the demo's

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        assert _traces_endpoint() is None
    finally:
        server.shutdown()
        server.server_close()
    metrics, traces = capsys.readouterr().err.splitlines()
    for signal_name, said in (("metrics", metrics), ("traces", traces)):
        assert said.startswith(f"ridtrace demo: {endpoint}/v1/{signal_name} answers 501 to "
                               "an export's POST, it is not an OTLP receiver"), said
        assert f"{signal_name} are not exported this run" in said, said
