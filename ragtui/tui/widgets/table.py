"""A DataTable that re-renders only the row whose cell changed.

Textual's ``DataTable.update_cell`` bumps one counter that is part of every render-cache key, so
changing one grade re-renders every visible row of the table (about 45 ms for the four tables a
grade touches). Here an update drops only that row's cached cells and rows; the line cache, which
only crops cached rows, is cleared whole.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.widgets import DataTable
from textual.widgets._data_table import ColumnKey, RowKey

CellType = TypeVar("CellType")


class RowCachedTable(DataTable[CellType], Generic[CellType]):
    """DataTable whose ``update_cell`` invalidates one row's render caches, not the whole table's."""

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        """Set one cell and re-render only its row (column widths are re-measured when asked)."""
        row = RowKey(row_key) if isinstance(row_key, str) else row_key
        column = ColumnKey(column_key) if isinstance(column_key, str) else column_key
        if update_width or row not in self._row_locations or column not in self._column_locations:
            super().update_cell(row_key, column_key, value, update_width=update_width)
            return
        self._data[row][column] = value
        row_index = self._row_locations.get(row)
        for cache in (self._cell_render_cache, self._row_render_cache):
            for key in [k for k in cache.keys() if k[0] == row]:  # noqa: SIM118 (LRUCache is not iterable)
                cache.discard(key)
        for key in [k for k in self._row_renderable_cache.keys() if k[1] == row_index]:  # noqa: SIM118
            self._row_renderable_cache.discard(key)
        self._line_cache.clear()
        self.refresh()
