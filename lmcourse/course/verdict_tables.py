"""One table per experiment: the verdicts of one comparison shown together.

An experiment with several claims (one per model, size or seed count) reads better as a
table than as a row of verdict lines::

    from lmcourse.course.claims import verdict
    from lmcourse.course.verdict_tables import verdict_table

    with verdict_table("Pre-training objectives against the masked LM (3 seeds each)"):
        for arm in arms:
            verdict(...)

Inside the block :func:`lmcourse.course.claims.verdict` decides and records each claim as
usual but does not display it (it goes into :data:`lmcourse.course.claims.COLLECTING`);
when the block ends, one bundle shows them all: an HTML table (claim, ours ± spread and
seeds, baseline, verdict, why: what JupyterLab, the site and the slides show), the verdict
lines as text, and every record (``claims.MIME_TABLE``, read back by ``claims.recorded``).
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from lmcourse.course.claims import COLLECTING, MIME_TABLE, Claim, format_number, in_ipython

__all__ = ["table_bundle", "verdict_table"]


def _baseline_cell(claim: Claim) -> str:
    b = claim.baseline
    if b is None:
        return "—"
    shown = format_number(b["figure"], claim.digits)
    if b["spread"] is not None:
        shown += (f" ± {format_number(b['spread'], claim.digits)} "
                  f"(half range of {b['seeds']} seeds)")
    return f"{b['name']} {shown}"


def table_bundle(claims: Sequence[Claim], title: str | None = None) -> dict:
    """The MIME bundle of one table of claims: an HTML table, the verdict lines as text,
    and the records."""
    metrics = {c.metric for c in claims}
    shared = metrics.pop() if len(metrics) == 1 else None
    direction = {c.higher_is_better for c in claims}
    if shared and len(direction) == 1 and None not in direction:
        shared += f", {'higher' if direction.pop() else 'lower'} is better"
    head = ["claim", shared or "ours", "baseline", "verdict", "why"]
    rows = []
    for c in claims:
        ours = c.figure if shared or not c.metric else f"{c.metric}: {c.figure}"
        cells = [c.claim, ours, _baseline_cell(c), f"<b>{html.escape(c.verdict)}</b>", c.why]
        rows.append("<tr>" + "".join(
            f"<td style='text-align:left'>{cell if i == 3 else html.escape(cell)}</td>"
            for i, cell in enumerate(cells)) + "</tr>")
    caption = (f"<caption style='text-align:left'><b>{html.escape(title)}</b></caption>"
               if title else "")
    table = ("<table class='lmcourse-verdicts'>" + caption + "<thead><tr>"
             + "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in head)
             + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    text = "\n".join(([title] if title else []) + [c.line for c in claims])
    return {"text/plain": text, "text/html": table, MIME_TABLE: [c.record() for c in claims]}


@contextmanager
def verdict_table(title: str | None = None) -> Iterator[list[Claim]]:
    """Collect the verdicts made inside the block and show them as one table when it ends
    (in IPython; elsewhere their lines are printed). Yields the list the claims go into."""
    rows: list[Claim] = []
    COLLECTING.append(rows)
    try:
        yield rows
    finally:
        COLLECTING.pop()
    if not rows:
        return
    if in_ipython():
        from IPython.display import display

        display(table_bundle(rows, title), raw=True)
    else:
        print("\n".join(([title] if title else []) + [c.line for c in rows]))
