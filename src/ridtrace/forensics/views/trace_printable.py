"""A `TraceView` with the logs' text made printable before it is laid out.

`visible` swaps each control or invisible character for one visible mark. Done only
when a line is printed, a zero-width space or an ESC took no cell while the line was
measured and one cell once shown: the line ran past its width and wrapped.
"""

from __future__ import annotations

from dataclasses import replace

from ridtrace.forensics.printable import cut_to_show, visible
from ridtrace.forensics.views.trace_rows import RequestBlock, TraceView
from ridtrace.forensics.views.verdicts import Verdict


def _shown(value: str | None) -> str | None:
    return None if value is None else visible(cut_to_show(value))


def _block(block: RequestBlock) -> RequestBlock:
    producer = block.verdict.got_output_of
    verdict = block.verdict if producer is None else Verdict(block.verdict.label, replace(
        producer, request_id=_shown(producer.request_id),
        x_request_id=_shown(producer.x_request_id), span_id=_shown(producer.span_id),
        worker_span_id=visible(producer.worker_span_id)))
    return replace(
        block, span_id=visible(block.span_id), request_id=_shown(block.request_id),
        x_request_id=_shown(block.x_request_id), trace_id=_shown(block.trace_id),
        route=_shown(block.route), status=_shown(block.status), outcome=_shown(block.outcome),
        verdict=verdict, overlaps=tuple(map(visible, block.overlaps)),
        deprecated_headers=tuple(visible(cut_to_show(h)) for h in block.deprecated_headers),
        spans=[replace(bar, span_id=visible(bar.span_id), outcome=_shown(bar.outcome),
                       file=visible(bar.file), name=_shown(bar.name)) for bar in block.spans],
        events=[replace(ev, span_id=visible(ev.span_id), event=visible(ev.event),
                        outcome=_shown(ev.outcome), level=_shown(ev.level),
                        file=visible(ev.file), detail=_shown(ev.detail))
                for ev in block.events],
    )


def printable_view(view: TraceView) -> TraceView:
    """`view` with every text from the logs passed through `visible`."""
    return replace(
        view, ident=visible(cut_to_show(view.ident)), blocks=[_block(b) for b in view.blocks],
        offsets_ms={visible(name): ms for name, ms in view.offsets_ms.items()},
    )
