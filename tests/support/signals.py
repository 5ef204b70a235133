"""Children started as from a terminal, whatever ran the suite."""

from __future__ import annotations

import signal


def hangup_as_from_a_terminal() -> None:
    """A ``preexec_fn``: the child takes SIGHUP as a terminal's child does (its default).

    A suite started under ``nohup`` (or by a CI agent that ignores SIGHUP) passes the
    ignored SIGHUP on to every process it starts, and ridtrace rightly keeps an ignored
    SIGHUP ignored: the tests of what a hangup does then saw nothing stop and timed out
    (60 s for analyze, 30 s for a follower). Those tests are about a terminal closing;
    their child starts as a terminal's would.
    """
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
