"""Where a deploy moved ``cli_graphs.Memo``: the same class at another import path."""

from __future__ import annotations

from pydantic import BaseModel


class Memo(BaseModel):
    """``cli_graphs.Memo``, moved here."""

    text: str
