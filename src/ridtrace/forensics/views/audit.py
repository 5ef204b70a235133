"""Deprecated-header audit: who still sends ``x-dynamo-request-id`` / ``request-id``, and when.

An API owner reads this to decide when support can go: per header, how many requests
and distinct clients, first and last seen, and use per day.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, cast

import pandas as pd

from ridtrace.contract import FRONTEND

AUDIT_BY: Final = ("header", "client", "route", "day")
_UNKNOWN = "(unknown)"


def deprecated_usage(requests: pd.DataFrame) -> pd.DataFrame:
    """One row per (request, deprecated header it sent): header, time, day, client, route."""
    dep = requests[(requests["side"] == FRONTEND) & requests["deprecated"].notna()]
    if dep.empty:
        columns = {c: pd.Series(dtype="object") for c in ("header", "client", "route", "span_id")}
        columns["time"] = pd.Series(dtype="datetime64[us, UTC]")
        columns["day"] = pd.Series(dtype="object")
        return pd.DataFrame(columns)  # type: ignore[no-any-return]
    headers = dep["deprecated"].astype(str).str.split(",")
    # Client ports change per connection; the host is what identifies a client.
    client = dep["client"].astype("object").where(dep["client"].notna(), None)
    host = client.map(lambda c: c.rsplit(":", 1)[0] if isinstance(c, str) else _UNKNOWN)
    route = dep["route"].astype("object").where(dep["route"].notna(), _UNKNOWN)
    frame = pd.DataFrame(
        {
            "header": headers.to_numpy(),
            "time": dep["start"].to_numpy(),
            "client": host.to_numpy(),
            "route": route.to_numpy(),
            "span_id": dep["span_id"].astype("object").to_numpy(),
        }
    ).explode("header")
    frame["header"] = frame["header"].str.strip()
    frame["time"] = pd.to_datetime(frame["time"], utc=True)
    frame["day"] = frame["time"].dt.strftime("%Y-%m-%d")
    return cast(pd.DataFrame, frame.reset_index(drop=True))


def _distinct_clients(clients: pd.Series) -> int:
    return int(clients[clients != _UNKNOWN].nunique())


def audit(requests: pd.DataFrame, by: str = "header") -> pd.DataFrame:
    """Aggregate deprecated-header use by ``header``, ``client``, ``route`` or ``day``."""
    if by not in AUDIT_BY:
        raise ValueError(f"by must be one of {AUDIT_BY}, not {by!r}")
    usage = deprecated_usage(requests)
    keys = ["header"] if by == "header" else (["day", "header"] if by == "day" else ["header", by])
    cols = ["requests", "clients", "first_seen", "last_seen"]
    if usage.empty:
        return cast(pd.DataFrame, pd.DataFrame(columns=keys + cols))
    grouped = usage.groupby(keys, sort=True)
    out = grouped.agg(
        requests=("span_id", "size"),
        clients=("client", _distinct_clients),
        first_seen=("time", "min"),
        last_seen=("time", "max"),
    ).reset_index()
    if by == "day":
        return cast(pd.DataFrame, out)
    order = [False] + [True] * len(keys)
    ranked = out.sort_values(["requests", *keys], ascending=order, ignore_index=True)
    return cast(pd.DataFrame, ranked)


def daily_series(requests: pd.DataFrame) -> pd.DataFrame:
    """Requests per day (rows) and header (columns); days without use are zero."""
    usage = deprecated_usage(requests)
    if usage.empty:
        return cast(pd.DataFrame, pd.DataFrame())
    table = usage.pivot_table(index="day", columns="header", values="span_id", aggfunc="size")
    days = pd.date_range(table.index.min(), table.index.max(), freq="D").strftime("%Y-%m-%d")
    return cast(pd.DataFrame, table.reindex(days, fill_value=0).fillna(0).astype(int))


def plot_usage(series: pd.DataFrame, path: Path) -> None:
    """Write a PNG of use per day per header (matplotlib, imported only here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    try:
        if series.empty:
            ax.text(0.5, 0.5, "no deprecated headers seen", ha="center", va="center")
        else:
            for header in series.columns:
                ax.plot(pd.to_datetime(series.index), series[header], marker="o", label=header)
            ax.legend()
        ax.set_title("Deprecated request-id headers: requests per day")
        ax.set_ylabel("requests")
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
