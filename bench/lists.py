"""Three list widgets side by side, on the question list's shape (a mark, an id, three ranks, a
question, slices) at 100,000 rows: Textual's DataTable, textual-fastdatatable (harlequin's, over
Arrow), and ragtui's own RowList (Line API). Each runs in a fresh child process:

- start-up: from ``run_test`` entered to the first screen with the rows painted;
- down, page down: a key to the repainted screen (30 of each, median and p95);
- one row changed: a cell updated in place (a grade) to the repainted screen (30).

python -m bench.lists [--rows 100000]       # textual-fastdatatable: pip install -e ".[bench]"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

from bench.common import percentile, run_child

IMPLEMENTATIONS = ("datatable", "fastdatatable", "rowlist")
COLUMNS = ("mark", "id", "bm", "vec", "hyb", "question", "slices")
QUESTION = "What is the capacity of the pumping station that drains the polder?"


def _row(i: int) -> tuple[str, ...]:
    """One synthetic question row."""
    return (
        "✗" if i % 7 == 0 else " ",
        f"s{i:06d}",
        str(1 + i % 9),
        str(1 + (i * 3) % 9),
        str(1 + (i * 5) % 9),
        f"{QUESTION} ({i})",
        "lookup, table",
    )


def _widget(kind: str, rows: int):
    """The list widget of ``kind`` holding ``rows`` rows."""
    if kind == "datatable":
        from textual.widgets import DataTable

        table: DataTable[str] = DataTable(cursor_type="row")
        table.add_columns(*COLUMNS)
        table.add_rows(_row(i) for i in range(rows))
        return table
    if kind == "fastdatatable":
        from textual_fastdatatable import ArrowBackend
        from textual_fastdatatable import DataTable as FastTable

        data = {c: [_row(i)[j] for i in range(rows)] for j, c in enumerate(COLUMNS)}
        return FastTable(backend=ArrowBackend.from_pydict(data), cursor_type="row")
    from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList

    values = [list(_row(i)) for i in range(rows)]

    class Rows(RowList):
        def row_cells(self, index: int) -> list[Cell]:
            return [Cell(v) for v in values[index]]

    widget = Rows()
    widget.values = values  # type: ignore[attr-defined]
    widths = (1, 7, 3, 3, 3, 60, 14)
    widget.call_after_refresh(
        lambda: (
            widget.set_columns([ColumnSpec(c, w) for c, w in zip(COLUMNS, widths, strict=True)]),
            widget.set_row_count(rows),
        )
    )
    return widget


async def _measure(kind: str, rows: int, repeat: int) -> dict[str, object]:
    from textual import events
    from textual.app import App, ComposeResult

    started = time.perf_counter()

    class ListApp(App[None]):
        def compose(self) -> ComposeResult:
            yield _widget(kind, rows)

    app = ListApp()
    out: dict[str, object] = {"kind": kind, "rows": rows}
    async with app.run_test(size=(120, 40)) as pilot:
        widget = app.screen.focus_chain[0] if app.screen.focus_chain else None
        assert widget is not None
        widget.focus()
        for _ in range(2000):
            await pilot.pause(0.001)
            lines = [widget.render_line(y).text for y in range(3)]
            if any("s000001" in line for line in lines):
                break
        done = asyncio.Event()
        app.call_after_refresh(done.set)
        await done.wait()
        out["startup_s"] = time.perf_counter() - started

        def cursor() -> int:
            return int(getattr(widget, "cursor_row", None) or getattr(widget, "cursor", 0))

        async def timed(action, moved: bool = False) -> float:
            done = asyncio.Event()
            before = cursor()
            t0 = time.perf_counter()
            action()
            while moved and cursor() == before:
                await asyncio.sleep(0.0005)
            app.call_after_refresh(done.set)
            await done.wait()
            return 1000 * (time.perf_counter() - t0)

        def key(name: str):
            return lambda: app._driver.send_message(events.Key(name, None))

        for name in ("down", "pagedown"):
            times = []
            for _ in range(repeat):
                times.append(await timed(key(name), moved=True))
                await pilot.pause()
            out[f"{name}_ms"] = times

        def update(i: int):
            def act() -> None:
                if kind == "datatable":
                    row_key = list(widget.rows)[i]
                    column_key = list(widget.columns)[2]
                    widget.update_cell(row_key, column_key, str(i % 9))
                elif kind == "fastdatatable":
                    widget.update_cell(i, 2, str(i % 9))
                else:
                    widget.values[i][2] = str(i % 9)
                    widget.refresh_row(i)

            return act

        times = []
        at = cursor()
        for i in range(repeat):
            times.append(await timed(update(max(0, at - 5 + i % 10))))
            await pilot.pause()
        out["update_ms"] = times
    return out


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ms (p95 {percentile(values, 95):.1f})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("child", nargs="?")
    parser.add_argument("--kind", default="rowlist")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--all", action="store_true", help="print only the JSON list of results")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_measure(args.kind, args.rows, args.repeat))))
        return 0
    results = []
    for kind in IMPLEMENTATIONS:
        print(f"{kind} ...", file=sys.stderr)
        try:
            results.append(
                run_child("bench.lists", "child", "--kind", kind, "--rows", str(args.rows))
            )
        except RuntimeError as exc:
            print(f"  {kind}: not measured ({str(exc).splitlines()[-1]})", file=sys.stderr)
    if args.all:
        print(json.dumps(results))
        return 0
    print(f"{'list':<14} {'start-up':>10}  {'down':<22} {'page down':<22} {'one row changed':<22}")
    for r in results:
        print(
            f"{r['kind']:<14} {r['startup_s']:>8.2f} s  {_summary(r['down_ms']):<22} "
            f"{_summary(r['pagedown_ms']):<22} {_summary(r['update_ms']):<22}"
        )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
