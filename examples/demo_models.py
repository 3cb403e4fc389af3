"""The structured outputs of the demo pipeline, as three deploys shaped them.

In a real project a deploy edits ``class Summary`` in place: the class keeps its name
and its module, and only its fields change. The demo runs every deploy in one process,
so each version gets a Python name of its own here (``SummaryV1``, ``SummaryV2``) and
then takes the real name back: a fingerprint covers a class's import path, so after
``_deployed_as`` the fields are the only difference neograph-ext sees, as after a deploy.
The real name is bound here too (to the newest version), so the checkpoint serializer
imports ``demo_models.Summary`` as it would after a deploy.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["Facts", "ReviewV1", "ReviewV3", "SummaryV1", "SummaryV2", "sample"]


def _deployed_as(name: str, *versions: type[BaseModel]) -> None:
    for cls in versions:
        cls.__name__ = cls.__qualname__ = name
    globals()[name] = versions[-1]


class Facts(BaseModel):
    """What ``extract`` pulls out of the document; never changes in the demo."""

    title: str
    claims: list[str]


class SummaryV1(BaseModel):
    """What ``summarize`` returns, as first deployed."""

    text: str


class SummaryV2(BaseModel):
    """Deploy 2: the summary also counts its words."""

    text: str
    word_count: int


class ReviewV1(BaseModel):
    """What ``review`` returns, as first deployed."""

    verdict: str


class ReviewV3(BaseModel):
    """Deploy 3: the verdict is one of two words, and comes with a confidence."""

    verdict: Literal["approve", "revise"]
    confidence: float


_deployed_as("Summary", SummaryV1, SummaryV2)
_deployed_as("Review", ReviewV1, ReviewV3)


_SAMPLES: dict[type[BaseModel], dict[str, Any]] = {
    Facts: {"title": "Versioned pipeline outputs", "claims": ["every step is typed"]},
    SummaryV1: {"text": "A proposal to version what every pipeline step returns."},
    SummaryV2: {"text": "A proposal to version what every pipeline step returns.", "word_count": 9},
    ReviewV1: {"verdict": "approve"},
    ReviewV3: {"verdict": "approve", "confidence": 0.9},
}


def sample(model: type[BaseModel]) -> BaseModel:
    """What the fake LLM answers when asked for ``model``: the same every time."""
    return model(**_SAMPLES[model])
