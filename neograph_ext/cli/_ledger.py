"""What the command line prints of a thread's budget ledger: one row per turn."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from neograph_ext.budget import Ledger
from neograph_ext.cli._show import text

__all__ = ["ledger_table"]


def ledger_table(thread: str, ledger: Ledger) -> Table:
    """The spend of each turn, oldest first, and the thread's total."""
    table = Table(
        "turn",
        "supersteps",
        "model calls",
        "tokens",
        title=text(f"budget ledger of thread {thread}"),
        caption=Text("counted across resumes, rewinds and crashes; never lowered"),
    )
    for number, spend in enumerate(ledger.turns, start=1):
        table.add_row(str(number), str(spend.supersteps), str(spend.model_calls), str(spend.tokens))
    total = ledger.total
    table.add_row(
        Text("total", style="bold"),
        str(total.supersteps),
        str(total.model_calls),
        str(total.tokens),
    )
    return table
