"""records.py: rows that turn into flat records and show as an HTML table in a notebook."""

from __future__ import annotations

from dataclasses import dataclass

from mlirhlo_driver.records import Rows


@dataclass
class _Row:
    name: str
    value: object

    def to_record(self) -> dict:
        return {"name": self.name, "value": self.value}


def test_rows_are_a_list_whose_records_are_each_rows_own():
    rows = Rows([_Row("a", 1), _Row("b", None)])
    assert isinstance(rows, list) and len(rows) == 2 and rows[1].name == "b"
    assert rows.to_records() == [{"name": "a", "value": 1}, {"name": "b", "value": None}]
    assert Rows().to_records() == []


def test_the_html_table_has_every_column_once_in_first_seen_order_and_escapes_text():
    class Wide(_Row):
        def to_record(self) -> dict:
            return {"value": self.value, "extra": "<x>"}

    html = Rows([_Row("a&b", 0.123456), Wide("w", 2)])._repr_html_()
    assert html.startswith("<table><thead><tr><th>name</th><th>value</th><th>extra</th></tr></thead>")
    # Floats to 4 significant digits, None and missing columns as empty cells, text escaped.
    assert "<tr><td>a&amp;b</td><td>0.1235</td><td></td></tr>" in html
    assert "<tr><td></td><td>2</td><td>&lt;x&gt;</td></tr>" in html
    assert Rows([_Row("n", None)])._repr_html_().count("<td></td>") == 1


def test_no_rows_show_as_a_line_not_an_empty_table():
    assert Rows()._repr_html_() == "<p><em>no rows</em></p>"
