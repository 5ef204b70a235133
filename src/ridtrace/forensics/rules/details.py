"""Finding details written alike by the batch rules and the live ones (no pandas here:
`--follow` starts without it)."""

from __future__ import annotations

__all__ = ["crossed_detail", "foreign_chunk_detail"]


def crossed_detail(span: object, fp_in: object, fp_out: object, w_span: object, w_in: object,
                   w_rid: object, w_xrid: object) -> str:
    """A crossed stream's detail, batch and live alike. The producer's ids as it logged
    them, each left out when it had none: "x_request_id None" was the Python spelling of
    a worker whose caller sent no client id, in a report meant to be read and grepped."""
    ids = ", ".join(f"{name} {value}" for name, value in
                    (("request_id", w_rid), ("x_request_id", w_xrid)) if value is not None)
    return (f"caller span {span} (fp_in {fp_in}) was delivered fp_out {fp_out}, produced by "
            f"worker span {w_span} for fp_in {w_in}" + (f" ({ids})" if ids else ""))


def foreign_chunk_detail(chunk_request_id: str | None) -> str:
    """A refused foreign chunk's detail. A chunk naming no id the frontend could write (none,
    a number, a value too long or with control characters) is logged with no
    ``chunk_request_id``, and the reader gives it as an empty one: refused all the same."""
    named = (f"for request {chunk_request_id}" if chunk_request_id
             else "naming no valid request id")
    return (f"a worker chunk {named} reached this caller's stream; "
            "it was not forwarded and the stream ended with an error")
