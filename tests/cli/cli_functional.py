"""Entrypoints the CLI tests point GRAPH at: ``v1`` and ``v2`` are one workflow before and
after a deploy that changed what its ``review`` task returns (``Review.score``: ``int ->
float``, the models of ``cli_graphs``); ``draft`` stayed."""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint, task
from langgraph.pregel import Pregel

from tests.cli.cli_graphs import ReviewV1, ReviewV2

__all__ = ["v1", "v2"]


def _workflow(review_type: type) -> Pregel[Any, Any, Any, Any]:
    def draft(doc: str) -> str:
        return doc.upper()

    def review(text: str) -> Any:
        return review_type(score=len(text))

    review.__annotations__["return"] = review_type
    draft_task, review_task = task(draft), task(review)

    @entrypoint()
    def workflow(doc: str) -> int:
        return int(review_task(draft_task(doc).result()).result().score)

    return workflow


v1 = _workflow(ReviewV1)
v2 = _workflow(ReviewV2)
