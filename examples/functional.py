"""neograph-ext on a Functional API workflow: ``@entrypoint`` and ``@task``, on SQLite.

    python examples/functional.py [WORKDIR]

1. The first run of ``outline -> draft -> polish`` crashes in ``polish`` (a simulated
   LLM timeout): ``outline`` and ``draft`` leave their results cached in the thread.
2. A deploy changes what ``draft`` returns (``Draft`` gains a field). The second run
   keeps ``outline``'s cached result, drops ``draft``'s (of the old shape) and every
   result after it, and re-runs ``draft`` and ``polish``.
3. The third run of the finished thread runs nothing: it is up to date.

Tasks sleep briefly instead of calling an LLM, so no API key is needed. The database is
created fresh in WORKDIR (default: a fixed directory under the system's temp dir).
"""

import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task

import neograph_ext as ne


# One class, ``Draft``, before and after the deploy: in a real project the deploy edits
# it in place; here both versions live in one process under the same name.
class DraftV1(TypedDict):
    text: str


class DraftV2(TypedDict):
    text: str
    words: int


for _version in (DraftV1, DraftV2):
    _version.__name__ = _version.__qualname__ = "Draft"


def workflow(draft_type: type, *, crash: bool) -> Any:
    """The workflow as one deploy has it: ``draft`` returns ``draft_type``."""

    @task
    def outline(topic: str) -> str:
        print("    outline running...")
        time.sleep(0.05)
        return f"three points on {topic}"

    def draft_body(points: str) -> Any:
        print("    draft running...")
        time.sleep(0.05)
        text = f"a draft of {points}"
        if "words" in draft_type.__annotations__:
            return {"text": text, "words": len(text.split())}
        return {"text": text}

    draft_body.__name__ = "draft"
    draft_body.__annotations__["return"] = draft_type
    draft = task(draft_body)

    @task
    def polish(text: str) -> str:
        print("    polish running...")
        if crash:
            raise TimeoutError("the model timed out")
        return text.capitalize()

    @entrypoint()
    def article(topic: str) -> str:
        points = outline(topic).result()
        return polish(draft(points).result()["text"]).result()

    return article


def main(workdir: Path) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    conn = sqlite3.connect(workdir / "threads.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    config = {"configurable": {"thread_id": "article-1"}}

    print("=== Stage 1 of 3: the first run crashes in polish ===")
    try:
        ne.run(ne.compile(workflow(DraftV1, crash=True), checkpointer=saver), "tides", config)
    except TimeoutError as exc:
        print(f"  crashed: {exc}")

    print("=== Stage 2 of 3: a deploy changed draft's return type ===")
    deployed = ne.compile(workflow(DraftV2, crash=False), checkpointer=saver)
    plan = ne.plan(deployed, config)
    print("\n".join(f"  {line}" for line in str(plan).splitlines()))
    print(f"  result: {ne.run(deployed, 'tides', config)}")

    print("=== Stage 3 of 3: the thread is up to date ===")
    print(f"  plan: {ne.plan(deployed, config).kind}")
    print(f"  result: {ne.run(deployed, 'tides', config)}")
    conn.close()


if __name__ == "__main__":
    default = Path(tempfile.gettempdir()) / "neograph-ext-functional"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
