"""Benchmark: fingerprint a schema of 200 nested pydantic models, cold; diff a hostile one.

Run as ``python bench/bench_fingerprint.py``; prints one markdown table row. An
aggregate benchmark imports ``run()`` and collects its rows.

The fingerprint module keeps no caches, so every call is cold: each repetition walks
all 200 models again and serialises their signature. The models form a binary tree
(model ``i`` holds models ``2i + 1`` and ``2i + 2``), and every tenth one points back
to the root, so recursion is exercised too.

The second row diffs a stored signature that was once exponential to explain: 40
parametrised classes, each naming the previous one twice (``Pair[P, P]``).
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
    from neograph_ext.decision._fingerprint import diff, fingerprint_type
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from neograph_ext.decision._fingerprint import diff, fingerprint_type

MODELS = 200
CHAIN = 40
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


def chain(depth: int, leaf: str) -> dict[str, Any]:
    """The stored signature of ``Pair[P, P]`` nested ``depth`` deep, one def per level."""
    defs: dict[str, Any] = {
        "m:Leaf": {"kind": "pydantic", "fields": {"x": {"t": leaf, "req": True}}}
    }
    previous = "m:Leaf"
    for level in range(depth):
        fields = {name: {"t": previous, "req": True} for name in ("a", "b")}
        defs[f"m:Pair[{level}]"] = {
            "kind": "pydantic",
            "fields": fields,
            "origin": "m:Pair",
            "args": [previous, previous],
        }
        previous = f"m:Pair[{level}]"
    return {"root": previous, "defs": defs}


def _median_ms(call: Any) -> float:
    call()  # warm-up: first-use costs of Python and pydantic, not ours
    times = []
    for _ in range(REPEATS):
        gc.collect()
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run() -> list[tuple[str, str, str]]:
    """Time ``fingerprint_type`` on the 200-model schema and ``diff`` on the hostile chain:
    the median of 9 calls each, after a warm-up.

    Returns:
        Rows ``(what, median time, target and verdict)`` for a markdown table.
    """
    root = build_schema()
    old, new = chain(CHAIN, "int"), chain(CHAIN, "str")
    rows = []
    for what, call in (
        (f"fingerprint_type, {MODELS} nested models", lambda: fingerprint_type(root)),
        (f"diff, {CHAIN} generics naming the previous twice", lambda: diff(old, new)),
    ):
        median = _median_ms(call)
        verdict = "met" if median < TARGET_MS else "**missed**"
        rows.append((what, f"{median:.1f} ms", f"target < {TARGET_MS:g} ms: {verdict}"))
    return rows


def main() -> None:
    """Print the benchmark's rows as markdown table lines."""
    for what, measured, target in run():
        print(f"| {what} | {measured} | {target} |")


if __name__ == "__main__":
    main()
