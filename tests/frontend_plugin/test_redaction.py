"""What of a worker URL may be shown."""

from __future__ import annotations

import pytest

from ridtrace.frontend_plugin.redaction import redacted_url


@pytest.mark.parametrize(("url", "shown"), [
    ("http://127.0.0.1:8101", "http://127.0.0.1:8101"),
    ("https://worker.internal/base/", "https://worker.internal/base/"),
    ("http://user:secretpw@127.0.0.1:8101", "http://***@127.0.0.1:8101"),
    ("http://user@127.0.0.1:8101/v", "http://***@127.0.0.1:8101/v"),
    # An unencoded '@' or '/' in the password still never shows any of it.
    ("http://user:pa@ss@host:1", "http://***@host:1"),
    ("http://user:pa/ss@host:1", "http://***@host:1"),
    ("user:secretpw@host:1", "***@host:1"),  # no scheme: rejected later, shown safely now
])
def test_userinfo_never_shows(url: str, shown: str) -> None:
    assert redacted_url(url) == shown
    assert "secretpw" not in redacted_url(url) and "pa" not in redacted_url(url).split("@")[0]
