"""Text from the logs made safe to print: control characters shown, not obeyed.

Request ids, client ids, messages and file names come from the logs, and a client
chooses its ids. Printed as they are, an ESC sequence recolours or clears a terminal
and an OSC one retitles its window; a CR or newline rewrites a line of the report.
Each control character is replaced by one visible character (C0 and DEL by their
Unicode control pictures, C1 by U+FFFD), so a styled line keeps its spans in place.
JSON output needs none of this: JSON escapes them itself.
"""

from __future__ import annotations

_SHOWN = {code: 0x2400 + code for code in range(0x20)}
_SHOWN[0x7F] = 0x2421
_SHOWN.update({code: 0xFFFD for code in range(0x80, 0xA0)})


def visible(text: str) -> str:
    """`text` with every control character replaced by a visible one of the same length."""
    return text.translate(_SHOWN)
