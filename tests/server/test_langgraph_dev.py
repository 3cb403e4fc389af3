"""End to end under LangGraph's own server: ``langgraph dev`` (in-memory runtime).

The test starts the real server on a loopback port, drives it with ``langgraph_sdk``
as a client would, stops it, deploys a changed ``Summary`` and starts it again. Nodes
run in the server's process, so they count themselves in a file. The server persists
its in-memory threads when it stops gracefully and loads them when it starts, which is
what lets a thread outlive the deploy.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

APP = Path(__file__).with_name("app_pipeline.py")
LANGGRAPH = Path(sys.executable).with_name("langgraph")
# Part of `make test` (about 15 s); `-m "not server"` leaves it out of a quick loop.
pytestmark = pytest.mark.server

SUMMARY_V1 = "class Summary(BaseModel):\n    title: str\n"
SUMMARY_V2 = "class Summary(BaseModel):\n    title: str\n    words: int\n"


class Server:
    """A ``langgraph dev`` project directory, and the server while it runs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = root / "runs"
        self.crash = root / "crash"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        (root / "app").mkdir()
        (root / "app" / "__init__.py").write_text("")
        shutil.copy(APP, root / "app" / "pipeline.py")
        # By module path: a file path would not reload the saved threads after a restart.
        graphs = (
            '{"pipeline": "app.pipeline:graph", "strict": "app.pipeline:strict", '
            '"functional": "app.pipeline:functional", "approval": "app.pipeline:approval"}'
        )
        (root / "langgraph.json").write_text(f'{{"dependencies": ["."], "graphs": {graphs}}}')

    def start(self) -> None:
        port = _free_port()
        env = {
            **os.environ,
            "PIPELINE_RUNS": str(self.runs),
            "PIPELINE_CRASH": str(self.crash),
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGSMITH_TRACING": "false",
        }
        args = ["dev", "--port", str(port), "--host", "127.0.0.1", "--no-browser", "--no-reload"]
        self.process = subprocess.Popen(
            [str(LANGGRAPH), *args],
            cwd=self.root,
            env=env,
            stdout=(self.root / "server.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log()
            try:
                if httpx.get(f"{self.url}/ok", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        pytest.fail(f"langgraph dev did not answer /ok within 60 s:\n{self.log()}")

    def stop(self) -> None:
        """Stop gracefully: the in-memory runtime saves its threads on shutdown."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def deploy(self, old: str, new: str) -> None:
        pipeline = self.root / "app" / "pipeline.py"
        pipeline.write_text(pipeline.read_text().replace(old, new))

    def counted(self) -> Counter[str]:
        """The nodes that ran since the last call."""
        ran = Counter(self.runs.read_text().split()) if self.runs.exists() else Counter()
        self.runs.unlink(missing_ok=True)
        return ran

    def log(self) -> str:
        return (self.root / "server.log").read_text(errors="replace")[-4000:]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    served = Server(tmp_path)
    try:
        yield served
    finally:
        served.stop()


def _values(parts: list[Any]) -> list[Any]:
    return [part.data for part in parts if part.event == "values"]


def test_a_served_thread_rewinds_after_a_deploy(server: Server) -> None:
    server.crash.touch()
    server.start()
    client = get_sync_client(url=server.url)
    waited = client.threads.create()["thread_id"]
    streamed = client.threads.create()["thread_id"]
    strict = client.threads.create()["thread_id"]
    for thread in (waited, strict):
        with pytest.raises(Exception, match="publish crashed"):
            client.runs.wait(thread, "pipeline", input={"url": "u"})
    streamed_parts = list(
        client.runs.stream(streamed, "pipeline", input={"url": "u"}, stream_mode="updates")
    )
    assert streamed_parts[-1].event == "error"
    assert server.counted() == Counter(fetch=3, extract=3, summarize=3, publish=3)
    server.stop()

    server.crash.unlink()
    server.deploy(SUMMARY_V1, SUMMARY_V2)
    server.start()
    client = get_sync_client(url=server.url)

    result = client.runs.wait(waited, "pipeline", input=None)
    assert server.counted() == Counter(summarize=1, publish=1)
    assert result["summary"] == {"title": "t", "words": 1}
    assert result["published"] == "title=t words=1"
    assert client.runs.wait(waited, "pipeline", input=None) == result
    assert server.counted() == Counter()

    with pytest.raises(Exception, match="CheckpointSchemaError") as raised:
        client.runs.wait(strict, "strict", input=None)
    assert "Invalidated nodes: summarize" in str(raised.value)
    assert server.counted() == Counter()

    modes = ["values", "updates"]
    parts = list(client.runs.stream(streamed, "pipeline", input=None, stream_mode=modes))
    assert [p.data for p in parts if p.event == "updates"] == [
        {"summarize": {"summary": {"title": "t", "words": 1}}},
        {"publish": {"published": "title=t words=1"}},
    ]
    assert _values(parts)[-1]["published"] == "title=t words=1"
    assert server.counted() == Counter(summarize=1, publish=1)
    again = list(client.runs.stream(streamed, "pipeline", input=None, stream_mode=modes))
    assert _values(again) == [_values(parts)[-1]]
    assert [p for p in again if p.event == "updates"] == []
    assert server.counted() == Counter()

    # A rollback to the old release leaves the threads the new release wrote alone: the
    # client gets the reason (a ValueError's message, which the server passes on).
    server.stop()
    server.deploy(SUMMARY_V2, SUMMARY_V1)
    server.start()
    client = get_sync_client(url=server.url)
    with pytest.raises(Exception, match="ThreadSupersededError") as refused:
        client.runs.wait(waited, "pipeline", input=None)
    assert "owned by newer code" in str(refused.value) and "take_over=True" in str(refused.value)
    assert server.counted() == Counter()


def test_a_served_entrypoint_keeps_the_cached_calls_before_the_changed_task(
    server: Server,
) -> None:
    server.crash.touch()
    server.start()
    client = get_sync_client(url=server.url)
    thread = client.threads.create()["thread_id"]
    with pytest.raises(Exception, match="publish crashed"):
        client.runs.wait(thread, "functional", input="u")
    assert server.counted() == Counter(fetch_text=1, summarize_text=1, publish_summary=1)
    server.stop()

    server.crash.unlink()
    server.deploy(SUMMARY_V1, SUMMARY_V2)
    server.start()
    client = get_sync_client(url=server.url)
    assert client.runs.wait(thread, "functional", input=None) == "title=t words=3"
    # fetch_text's cached result was kept; the changed task and the one after it re-ran.
    assert server.counted() == Counter(summarize_text=1, publish_summary=1)
    assert client.runs.wait(thread, "functional", input=None) == "title=t words=3"
    assert server.counted() == Counter()


def _custom(parts: list[Any]) -> list[Any]:
    return [part.data for part in parts if part.event == "custom"]


def test_a_client_streaming_custom_is_told_when_its_answer_is_set_aside(server: Server) -> None:
    server.start()
    client = get_sync_client(url=server.url)
    asked, unchanged = (client.threads.create()["thread_id"] for _ in range(2))
    for thread in (asked, unchanged):
        client.runs.wait(thread, "approval", input={})
    assert server.counted() == Counter(draft=2, review=2)
    # Nothing changed: the stream is LangGraph's, the node's own events only.
    parts = list(
        client.runs.stream(unchanged, "approval", command={"resume": "yes"}, stream_mode="custom")
    )
    assert _custom(parts) == [{"progress": "review"}]
    assert server.counted() == Counter(review=1)
    server.stop()

    server.deploy(SUMMARY_V1, SUMMARY_V2)
    server.start()
    client = get_sync_client(url=server.url)
    parts = list(
        client.runs.stream(asked, "approval", command={"resume": "yes"}, stream_mode="custom")
    )
    told, *rest = _custom(parts)
    assert set(told) == {"neograph_ext"}
    assert told["neograph_ext"]["kind"] == "rewind"
    assert told["neograph_ext"]["rerun"] == ["draft", "review"]
    assert rest == [{"progress": "review"}]  # the question is asked again, not answered
    assert server.counted() == Counter(draft=1, review=1)
    state = client.threads.get_state(asked)
    assert state["next"] == ["review"] and "answer" not in state["values"]
