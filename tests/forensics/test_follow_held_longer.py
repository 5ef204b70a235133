"""A span's later line that holds its id longer makes a later holder a duplicate live too.

Under the legacy policy a caller whose response task was dropped logs its Unlinked error
after its own ``request.end``. `analyze` takes the caller as holding its id until that
line, so a caller that took the id in between is a duplicate in flight. Live, the second
caller had been judged apart when it came (the first had ended), and the first caller's
later line never brought the two together again: 21 duplicates live against 22 in the
batch read on a legacy demo run.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, rt_request, ts


def _keys(findings: list[dict[str, object]]) -> list[tuple[object, object]]:
    return sorted((f["kind"], f["request_id"]) for f in findings if f["severity"] == "error")


def test_a_later_line_that_holds_the_id_longer_makes_the_next_holder_a_duplicate(
    tmp_path: Path,
) -> None:
    log = tmp_path / "frontend.jsonl"
    first, second = rt_request("a1", "7", 0.0, 1.0), rt_request("b2", "7", 1.1, 2.0)
    log.write_text("\n".join([*first, second[0]]) + "\n")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    follower.start()
    try:
        found, _ = follower.poll()  # the second caller took the id after the first ended
        unlinked = rt("response.unlinked", time=ts(1.2), request_id="7", trace_id=f"{'a1':0>32}",
                      span_id="a1", error="Unlinked response; response task was dropped")
        with log.open("a") as handle:
            handle.write(unlinked + "\n" + second[1] + "\n")
        more, _ = follower.poll()
        found += more + follower.finish()
    finally:
        follower.close()
    batch = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    expected = _keys(json.loads(batch.stdout)["findings"])
    assert ("duplicate_in_flight", "7") in expected
    assert _keys(found) == expected
