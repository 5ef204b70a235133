"""A file's query does not wait for pandas: the rules import it beside the read.

`span_piece` imported pandas (through `records.partials`) before the file's query ran,
so every read's first query waited ~0.25 s for the import going on beside it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ridtrace.testing.synth import SynthSpec, write_logs

_READ_WITHOUT_PANDAS = """
import sys


class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not to be imported by the read")


sys.meta_path.insert(0, NoPandas())
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.parallel import read_all
from ridtrace.forensics.records.read import span_piece

read = read_all(expand_inputs([sys.argv[1]]), span_piece, lean=True)
print(len(read.results), sum(piece.spans.num_rows for piece in read.results))
"""


def test_files_are_read_to_their_spans_without_pandas(tmp_path: Path) -> None:
    write_logs(tmp_path, SynthSpec(requests=30, seed=5))
    done = subprocess.run([sys.executable, "-c", _READ_WITHOUT_PANDAS, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files, spans = map(int, done.stdout.split())
    assert files >= 2 and spans >= 30
