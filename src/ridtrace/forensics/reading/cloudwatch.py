"""CloudWatch Logs events as the AWS CLI writes them: ``aws logs filter-log-events`` (and
``get-log-events``) with its default ``--output json``, one document for all the pages.

The AWS CLI writes that document indented by four spaces, each event an object of its
own and each event's ``message`` (the service's line) on a line of its own::

    {
        "events": [
            {
                "logStreamName": "ecs/frontend/4f1e",
                "timestamp": 1790949900003,
                "message": "{\\"time\\":\\"2026-10-02T14:05:00.003195Z\\",…}",
                …

Read as JSON lines, every line of it was a bad one and the report said only "none of
its lines is a log record". Each ``message`` line is its event's line here, cited at
that line of the document; every other line of the document is an empty line (empty
lines are not rows), so the lines counted are the events.
"""

from __future__ import annotations

import json
import re

from ridtrace.forensics.reading.judge import PAGE_MARK
from ridtrace.forensics.reading.unwrap_parts import LineByLine, carried_line

__all__ = ["CloudWatchEventsUnwrapper", "is_cloudwatch_events"]

_MESSAGE = re.compile(rb'\s*"message": ("(?:[^"\\]|\\.)*")\s*,?\s*$')
_ANY_MESSAGE = re.compile(rb'\s*"message": ')
# One page of the events: the AWS CLI under --max-items ends the document with the token
# to go on from ("NextToken"), under --no-paginate with the API's ("nextToken").
_NEXT_TOKEN = re.compile(rb'\s*"(?:NextToken|nextToken)": "')


def is_cloudwatch_events(lines: list[bytes]) -> bool:
    """Whether the first lines (stripped, blank ones left out) open the AWS CLI's JSON
    document of log events."""
    return len(lines) > 1 and lines[0] == b"{" and lines[1] == b'"events": ['


class CloudWatchEventsUnwrapper(LineByLine):
    """The AWS CLI's JSON document of log events: each event's ``message`` line."""

    name = "aws logs JSON"

    def unwrap(self, line: bytes, number: int) -> bytes:
        message = _MESSAGE.match(line)
        if message is None:
            if _NEXT_TOKEN.match(line) is not None:  # the events past it were not fetched
                return PAGE_MARK + b"the events before its NextToken (--max-items, --no-paginate)"
            # An event's message that is no string (null, a number: a document edited
            # by hand) was passed over with the document's other lines, its event
            # neither read nor counted: it is judged as the line it is.
            return line if _ANY_MESSAGE.match(line) is not None else b""
        try:
            text = json.loads(message[1])
        except ValueError:
            return line  # no JSON string after all: judged as the line it is
        return carried_line(str(text))  # cited at the document's line
