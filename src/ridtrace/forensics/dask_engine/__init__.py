"""The forensics on a Dask cluster (``--engine dask``; docs/scale-out.md).

Needs the ``dask`` extra (dask, distributed, fsspec); the CLI imports this package only
for ``--engine dask``, and the pandas engine never does.
"""

try:  # fail here, naming the extra, rather than with a bare "No module named 'dask'"
    import dask  # noqa: F401
    import distributed  # noqa: F401
    import fsspec  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "ridtrace.forensics.dask_engine needs the dask extra: pip install 'ridtrace[dask]'"
    ) from exc
