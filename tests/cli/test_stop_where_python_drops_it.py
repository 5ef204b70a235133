"""A stop whose signal handler ran where Python drops exceptions is not lost.

Dask's `GCDiagnosis` runs Python code in a garbage-collector callback, between two lines
of anyone's. A SIGTERM handled there raised `Terminated` inside it, where Python prints
"Exception ignored in …" and goes on: `analyze --engine dask` kept reading, and the
supervisor that sent SIGTERM waited for a stop that never came (seen once in a full run
of tests/cli/test_cli_ux.py's SIGTERM test, killed after 60 s). The signal is now sent
again, and lands outside the callback.
"""

from __future__ import annotations

import subprocess
import sys

_STOPPED_INSIDE_A_GC_CALLBACK = """
import gc, os, signal, sys, time
from ridtrace.cli import stop

signal.signal(signal.SIGTERM, stop.raise_terminated)
sent = []

def callback(phase, info):
    if phase == "start" and not sent:
        sent.append(True)
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(200_000):  # Python runs the handler here, inside the callback
            pass

gc.callbacks.append(callback)
try:
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.01)
except stop.Terminated as stopped:
    print("stopped", flush=True)
    sys.exit(stop.exit_code(stopped))
print("still running after 10 s", flush=True)
"""


def test_a_sigterm_handled_inside_a_gc_callback_still_stops_the_process() -> None:
    done = subprocess.run([sys.executable, "-c", _STOPPED_INSIDE_A_GC_CALLBACK],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (143, "stopped\n"), done.stderr
    # The dropped stop is sent again, not printed as an ignored exception.
    assert "Exception ignored" not in done.stderr, done.stderr


# A stop raised and taken once (as a command that stopped), and a `__del__` whose
# ValueError Python drops, printing "Exception ignored".
_STOPPED_ONCE = (
    "import signal, sys\n"
    "from ridtrace.cli import stop\n"
    "signal.signal(signal.SIGTERM, stop.raise_terminated)\n"
    "def stop_once():\n"
    "    try:\n"
    "        stop.raise_terminated(signal.SIGTERM, None)\n"
    "    except stop.Terminated:\n"
    "        pass\n"
    "stop_once()\n"
)
_DROPPED_VALUE_ERROR = (
    "class Broken:\n"
    "    def __del__(self):\n"
    "        raise ValueError('from __del__')\n"
    "Broken()\n"
    "print('went on', flush=True)\n"
)


def _run(program: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout) == (0, "went on\n"), done.stderr
    return done


def test_other_dropped_exceptions_are_still_printed() -> None:
    done = _run(_STOPPED_ONCE + _DROPPED_VALUE_ERROR)
    assert "Exception ignored" in done.stderr and "ValueError: from __del__" in done.stderr


def test_a_library_hook_passing_on_to_ours_makes_no_loop() -> None:
    # A library (an error reporter) installs its hook over ridtrace's and passes what it
    # sees on to it; a second stop then put ridtrace's over the library's, each passing
    # on to the other: a dropped ValueError went round until RecursionError.
    library = (
        "ours = sys.unraisablehook\n"
        "def library_hook(unraisable):\n"
        "    print('library saw', type(unraisable.exc_value).__name__, file=sys.stderr)\n"
        "    ours(unraisable)\n"
        "sys.unraisablehook = library_hook\n"
        "stop_once()\n"
    )
    done = _run(_STOPPED_ONCE + library + _DROPPED_VALUE_ERROR)
    assert done.stderr.count("library saw ValueError") == 1, done.stderr[-2000:]
    assert done.stderr.count("ValueError: from __del__") == 1, done.stderr[-2000:]
    assert "RecursionError" not in done.stderr
