"""OTLP/HTTP over https to a collector behind a private CA, as a real TLS receiver sees it."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.support.otlp_receiver import export_one_of_each, otlp_receiver

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(name: str, cwd: Path) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
             "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN={name}", cwd=cwd)


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    """A private CA, a loopback server certificate it signed, and an unrelated CA."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    _ca("ca", tmp_path)
    _ca("other-ca", tmp_path)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
             "server.csr", "-subj", "/CN=localhost", cwd=tmp_path)
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
             cwd=tmp_path)
    return tmp_path


@pytest.mark.parametrize("bundle_variable", [None, "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_the_certificate_variable_is_the_ca_verified_against(
    pki: Path, monkeypatch: pytest.MonkeyPatch, bundle_variable: str | None
) -> None:
    # requests let REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (set system-wide on many images)
    # win over the exporter's CA file: every export failed "certificate verify failed".
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(variable, raising=False)
    if bundle_variable:
        monkeypatch.setenv(bundle_variable, str(pki / "other-ca.pem"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    with otlp_receiver(tls=context) as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_EXPORTER_OTLP_CERTIFICATE": str(pki / "ca.pem"),
               "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
               "OTEL_BSP_SCHEDULE_DELAY": "600000", "OTEL_METRIC_EXPORT_INTERVAL": "600000"}
        export_one_of_each("tls", env)
        assert receiver.endpoint.startswith("https://")
        assert [s.service_name for s in receiver.spans] == ["tls"]
        assert receiver.metric("ridtrace.requests", "tls", route="/x") == 1
