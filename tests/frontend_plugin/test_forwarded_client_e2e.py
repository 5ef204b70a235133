"""Whose ``X-Forwarded-For`` the logged ``client`` follows: uvicorn's FORWARDED_ALLOW_IPS,
as docs/cli.md says (a local process can set it under the default, none can when
the variable is empty)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.frontend_plugin.conftest import start_stack


@pytest.mark.parametrize(("allowed", "believed"), [(None, True), ("", False)])
def test_the_logged_client_follows_forwarded_for_only_from_trusted_peers(
    tmp_path: Path, allowed: str | None, believed: bool,
) -> None:
    env = {} if allowed is None else {"FORWARDED_ALLOW_IPS": allowed}
    with start_stack(tmp_path, workers=[[]], env=env) as stack:
        response = httpx.get(stack.url + "/health", timeout=10,
                             headers={"x-forwarded-for": "203.0.113.9"})
        start = stack.frontend.wait_for_event(response.headers["x-server-request-id"],
                                              "request.start")
    assert str(start["client"]).startswith("203.0.113.9") is believed
    assert str(start["client"]).startswith("127.0.0.1") is not believed
