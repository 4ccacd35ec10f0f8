"""The plan view's building blocks: tables that never cut a cell, ``key  value`` settings, numbers and shares.

Shared by :mod:`fmcluster.cli.planview` (compute, network, storage), :mod:`fmcluster.cli.planservices`
(scheduler, monitoring) and :mod:`fmcluster.cli.plancost` (cost).
"""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

UNITS = "MB = 10^6 B, GB = 10^9 B, TB = 10^12 B, GiB = 2^30 B, TiB = 2^40 B"
UNCONFIRMED = "unconfirmed"


def num(value: float | None, fmt: str = "{:,.1f}") -> str:
    return UNCONFIRMED if value is None else fmt.format(value)


def hbm_tb(gb: float | None) -> str:
    return num(None if gb is None else gb / 1000, "{:,.2f}")


def share(value: float) -> str:
    """A share of wall time: one decimal, and ``<0.1%`` rather than a misleading ``0.0%``."""
    return "<0.1%" if 0 < value < 0.0005 else f"{value:.1%}"


def table(title: str, *columns: str, left: tuple[str, ...] = (), wide: bool = False) -> Table:
    """A table whose cells fold (wrap) rather than end in an ellipsis; ``wide``: boxed, one line per cell."""
    t = Table(title=Text(title, style="bold"), title_justify="left", box=box.HEAVY_HEAD if wide else None,
              pad_edge=wide, padding=(0, 1), header_style="underline" if not wide else "bold")
    for column in columns:
        t.add_column(column, justify="left" if column in left else "right", overflow="fold")
    return t


def settings(title: str) -> Table:
    """Two columns, ``key  value``; a long value wraps at words under itself."""
    t = Table.grid(padding=(0, 2))
    t.title = Text(title, style="bold")
    t.title_justify = "left"
    t.add_column(no_wrap=True, style="dim")
    t.add_column(overflow="fold")
    return t


def row(t: Table, *cells: str) -> None:
    t.add_row(*(Text(c) for c in cells))  # cells are text, never console markup
