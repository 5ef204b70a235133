"""A request for a route's path with a method the route does not take (405) is labelled
with that route, in its span (``http.route``) and in ``ridtrace.requests``, as seen by a
real OTLP receiver after SIGTERM."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import exporting_frontend
from tests.support.otlp_receiver import otlp_receiver


def test_a_405_names_the_route_whose_path_it_asked_for(tmp_path: Path) -> None:
    # The inference routes answered a GET (a client that got the method wrong) under
    # route "unmatched" and without http.route, as if the path were unknown, while
    # FastAPI's own routes (/v1/models) named themselves for the same mistake: a dashboard
    # by route sent the operator looking for a wrong URL instead of a wrong method.
    with otlp_receiver() as receiver:
        with exporting_frontend(tmp_path, receiver.endpoint) as frontend:
            asked = {
                "/v1/chat/completions": "GET",
                "/v1/messages/count_tokens": "PUT",
                "/v1/models": "DELETE",  # a FastAPI route: named already
            }
            with httpx.Client(base_url=frontend.url, timeout=30) as client:
                for path, method in asked.items():
                    answer = client.request(method, path, headers={"x-request-id": path})
                    assert answer.status_code == 405, answer.text
                    assert answer.json()["error"]["message"].startswith("Method Not Allowed")
                unknown = client.get("/v1/no/such/route", headers={"x-request-id": "unknown"})
                assert unknown.status_code == 404
        spans = {s.attributes.get("x_request_id"): s for s in receiver.wait_for(5, timeout=20)}
        receiver.wait_for_metric_exports(1, timeout=20)
        for path in asked:
            assert spans[path].attributes["http.response.status_code"] == 405
            assert spans[path].attributes.get("http.route") == path, spans[path].attributes
            assert receiver.metric("ridtrace.requests", route=path, outcome="ok") == 1, path
        # A path no route serves stays unnamed: clients must not choose the cardinality.
        assert "http.route" not in spans["unknown"].attributes
        assert receiver.metric("ridtrace.requests", route="unmatched") == 1
