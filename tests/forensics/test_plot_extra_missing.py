"""Without the ``plot`` extra, ``ridtrace.forensics.plot_usage`` says which extra to install.

It is public API (``ridtrace.forensics.__all__``) and imports matplotlib when called:
without it the call failed with a bare ``No module named 'matplotlib'``, naming no extra,
where the CLI's ``--plot``, the Dask engine and ``ridtrace.tracing.grpc`` name theirs.
The run blocks matplotlib in a fresh interpreter, as an environment without it would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.servers import child_pythonpath

_CALL = """
import sys; sys.modules["matplotlib"] = None  # None: `import matplotlib` raises ImportError
from pathlib import Path
import pandas as pd
from ridtrace.forensics import plot_usage
plot_usage(pd.DataFrame(), Path(sys.argv[1]))
"""


def test_plot_usage_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    plot = tmp_path / "use.png"
    done = subprocess.run([sys.executable, "-c", _CALL, str(plot)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": child_pythonpath()},
                          timeout=60)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and "pip install 'ridtrace[plot]'" in last, done.stderr
    assert not plot.exists()
