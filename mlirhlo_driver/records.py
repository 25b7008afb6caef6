"""Result rows for people and notebooks: a list that turns into records and shows as a table.

Kernel rows (cuda/kernels.py), per-fusion cost rows (cuda/roofline.py) and XLA pass rows
(xla/pass_log.py) come back from the API in a :class:`Rows`: a plain list, plus
:meth:`Rows.to_records` (one flat dict per row, for ``pandas.DataFrame(rows.to_records())``
or ``json.dumps``) and ``_repr_html_`` (Jupyter shows an HTML table). Each row class has
``to_record()``. Import-light: no jax, no numpy.
"""

from __future__ import annotations

import html
from typing import Any


class Rows(list):
    """Rows of one kind, in order; a list in every other respect."""

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per row (``row.to_record()``): str, int, float, bool or None values."""
        return [row.to_record() for row in self]

    def _repr_html_(self) -> str:
        records = self.to_records()
        if not records:
            return "<p><em>no rows</em></p>"
        columns = list(dict.fromkeys(k for r in records for k in r))
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>"
                       for r in records)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))
