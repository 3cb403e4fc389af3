"""Benchmark: fingerprint a schema of 200 nested pydantic models, cold.

Run as ``python bench/bench_fingerprint.py``; prints one markdown table row. An
aggregate benchmark imports ``run()`` and collects its rows.

The fingerprint module keeps no caches, so every call is cold: each repetition walks
all 200 models again and serialises their signature. The models form a binary tree
(model ``i`` holds models ``2i + 1`` and ``2i + 2``), and every tenth one points back
to the root, so recursion is exercised too.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

try:
    from neograph_ext._fingerprint import fingerprint_type
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from neograph_ext._fingerprint import fingerprint_type

MODELS = 200
REPEATS = 9
TARGET_MS = 50.0


def build_schema(count: int = MODELS) -> type[BaseModel]:
    """Build ``count`` models referencing each other as a binary tree; return the root."""
    built: dict[int, type[BaseModel]] = {}
    for index in reversed(range(count)):
        fields: dict[str, Any] = {
            "name": (str, Field(max_length=80, description="display name")),
            "score": (Annotated[float, Field(ge=0, le=1)], 0.5),
            "tags": (list[str], []),
            "mode": (Literal["fast", "slow"], "fast"),
            "meta": (dict[str, int | str | None], {}),
        }
        for child in (2 * index + 1, 2 * index + 2):
            if child in built:
                fields[f"child_{child}"] = (built[child] | None, None)
        if index and index % 10 == 0:
            fields["root"] = ("Model0 | None", None)
        built[index] = create_model(f"Model{index}", __module__="bench_schema", **fields)
    Model0 = built[0]  # model_rebuild() resolves "Model0" from this frame
    for model in built.values():
        model.model_rebuild()
    return Model0


def run() -> list[tuple[str, str, str]]:
    """Time ``fingerprint_type`` on the 200-model schema: the median of 9 calls after a warm-up.

    Returns:
        One row ``(what, median time, target and verdict)`` for a markdown table.
    """
    root = build_schema()
    fingerprint_type(root)  # warm-up: first-use costs of Python and pydantic, not ours
    times = []
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter()
        fingerprint_type(root)
        times.append((time.perf_counter() - start) * 1000)
    median = statistics.median(times)
    verdict = "met" if median < TARGET_MS else "**missed**"
    what = f"fingerprint_type, {MODELS} nested models"
    return [(what, f"{median:.1f} ms", f"target < {TARGET_MS:g} ms: {verdict}")]


def main() -> None:
    """Print the benchmark's rows as markdown table lines."""
    for what, measured, target in run():
        print(f"| {what} | {measured} | {target} |")


if __name__ == "__main__":
    main()
