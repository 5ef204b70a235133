"""The text a runtime or a log tool puts before a service's line: CRI's time, stream and
tag, ``kubectl logs --timestamps/--prefix``, syslog's, ``logcli query``'s, ``aws logs
tail``'s, ``docker compose logs``' and ``stern``'s; and the record behind it.

Its own module, apart from `reading.unwrap`: a collector's or Loki's batch
(`unwrap_parts.batched_record`) takes the prefix off each record it carries too, and
`unwrap` imports those readers.
"""

from __future__ import annotations

import re

__all__ = ["CRI_LINE", "PREFIX", "behind_prefixes", "cri_part"]

# RFC 3339 as Go's RFC3339Nano writes it (kubelet, containerd, Docker, kubectl).
_TIME = rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"
# Kubelet's CRI log line: RFC 3339 nano time, stream, tag (P partial / F full), content.
# An empty line may end at its tag, without the space before the content.
CRI_LINE = re.compile(
    _TIME + rb" (stdout|stderr) ([PF])"
    rb"(?::[^ \r]*)?(?: |\r?$)"
)
# Loki's `logcli query` default output puts the stream's labels, as Prometheus writes
# them and padded to the longest, between the time and the line: {app="x", pod="y"}.
_LABELS = rb'\{(?:[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*"(?:, )?)*\} +'
# `aws logs tail` (its default, detailed output) puts the log stream's name between the
# time and the line: "2026-10-02T14:00:00.003000+00:00 ecs/frontend/4f1e {...}".
_STREAM_NAME = rb"[^\s{\[]+ (?=\{)"
# `aws logs tail --format short`: the time to the second, in UTC with no offset, then
# the line: "2026-10-02T14:00:00 {...}".
_AWS_SHORT = rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2} (?=\{)"
# `docker compose logs`: each container's name padded to the longest, " | ", then with
# --timestamps the time: "frontend-1  | {...}". On a terminal (or with --ansi always,
# as a log copied from one or captured by `script` has it) the name and its bar are in
# the container's colour: "\x1b[36mfrontend-1  |\x1b[0m {...}" from docker-compose v1,
# "\x1b[36mfrontend-1  | \x1b[0m{...}" from Compose v2 (its colour takes in the space).
# Read as they were, such lines were all bad ones and a real incident was an
# incomplete read (exit 3).
_SGR = rb"(?:\x1b\[[0-9;]*m)?"
_COMPOSE = _SGR + rb"[A-Za-z0-9][A-Za-z0-9_.-]* +\|(?: " + _SGR + rb"|" + _SGR + rb" )"
# `stern` (Kubernetes' multi-pod tail), its default output: the pod's name and the
# container's, the namespace's before them with --all-namespaces, each in its colour on
# a terminal or with --color always; with --timestamps the time the API put before the
# line. Names as Kubernetes takes them (lower case, digits, "-", and "." in a pod's).
# The line after them is JSON, or the first lines' banner before a JSON line does
# follow (`_shipper_of`): a text log's two first words are no pod and container.
_K8S_NAME = _SGR + rb"[a-z0-9][-a-z0-9.]*+(?<=[a-z0-9])" + _SGR
_STERN = rb"(?:" + _K8S_NAME + rb" ){2,3}"
# syslog's line as journald and rsyslog write it: `journalctl -u dynamo` (its default
# output, "Oct 02 14:05:02 gpu-3 dynamo[4242]: ", and -o short-precise, short-iso,
# short-iso-precise, short-full "Fri 2026-10-02 14:05:02 UTC", short-unix
# "1790949902.110377"), a copied /var/log/syslog or /var/log/messages (rsyslog's
# traditional format, "Oct  2 …", or its RFC 3339 one): the time, the host, the
# program and its pid, then the service's line as it wrote it. A line journald or
# rsyslog cut (journald's LineMax, rsyslog's message size) stays a bad line.
_SYSLOG_TIME = (rb"(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?|\d{4}-\d{2}-\d{2}T"
                rb"\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})"
                rb"|[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? [A-Za-z0-9+-]+"
                rb"|\d{9,11}\.\d+)")
_SYSLOG = _SYSLOG_TIME + rb" [^\s\[\]:{]+ [^\s\[\]:{]+(?:\[\d+\])?: "
# syslog's prefix (first: its time is also kubectl's); kubectl's --prefix, its
# --timestamps, or both; one of them at least; logcli's time and labels; aws logs
# tail's time and stream; docker compose's container name, perhaps with the time; aws
# logs tail's short time; stern's names, perhaps with the time.
PREFIX = re.compile(
    _SYSLOG + rb"|"
    rb"\[[^\]\s]+\] (?:" + _TIME + rb" )?|"
    + _TIME + rb" (?:" + _LABELS + rb"|" + _STREAM_NAME + rb")?|"
    + _COMPOSE + rb"(?:" + _TIME + rb" )?|" + _AWS_SHORT + rb"|"
    + _STERN + rb"(?:" + _TIME + rb" )?"
)


def cri_part(line: bytes) -> tuple[bool, bytes, bytes] | None:
    """A CRI line's parts: whether it is a record's last (tag ``F``), its stream, and
    its content; None for a line that is no CRI line."""
    head = CRI_LINE.match(line)
    if head is None:
        return None
    return head[2] == b"F", head[1], line[head.end():].removesuffix(b"\r")


def record_behind_prefix(line: bytes) -> bytes | None:
    """The record of a line a runtime prefixed whole (a CRI ``F`` line, ``kubectl logs
    --timestamps`` or ``--prefix``, ``logcli query``), or None. A record the runtime cut
    into parts (``P``) stays a bad line: its parts are not put together here."""
    head = CRI_LINE.match(line)
    if head is not None:
        return line[head.end():].removesuffix(b"\r") if head[2] == b"F" else None
    head = PREFIX.match(line)
    return None if head is None else line[head.end():]


def behind_prefixes(line: bytes) -> bytes | None:
    """`record_behind_prefix`, once more when a prefix stands before another (``logcli
    query``'s time and labels before a CRI line it was shipped as)."""
    inner = record_behind_prefix(line)
    if inner is not None and not inner.startswith(b"{"):
        return record_behind_prefix(inner) or inner
    return inner
