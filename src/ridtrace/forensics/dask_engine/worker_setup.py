"""What a local cluster's worker process does first (Dask's preload hook): ignore SIGINT.

A Ctrl-C at the terminal reaches every process of the foreground group, the local
cluster's workers as well as ridtrace. Each worker raised KeyboardInterrupt in its event
loop and printed two tracebacks above ridtrace's one-line "interrupted", which read as
a crash. ridtrace itself stops the cluster when it is interrupted (closing it ends its
workers), so the workers have nothing to do with the signal.
"""

from __future__ import annotations

import signal
import threading
from typing import Any


def dask_setup(worker: Any) -> None:  # Dask passes the worker; unused here
    """Run by Dask as the worker starts: in a worker process's main thread, or in
    ridtrace's own process on a thread of its event loop (``processes=False``), where
    the signal is ridtrace's and is left alone."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
