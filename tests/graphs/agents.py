"""Agents built by LangChain's and deepagents' builders, with a scripted chat model and
counting tools and middleware: no network, no keys.

Rules:
- ``ScriptedChat`` answers from the conversation alone (the AI messages since the last
  human message pick the script's entry), so a rewound call answers as the first one
  did, under the code of the deploy that runs it.
- Tool arguments come from the schema of the tool as bound: after a deploy that adds an
  argument, the model's new call carries it, as a real model's would.
- Every model call, tool call and middleware hook run is counted in one ``Counter``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NotRequired

from deepagents import create_deep_agent
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ProviderStrategy
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict

from tests.graphs.models import AnsweringChat
from tests.graphs.pipelines import Crash

Step = str | tuple[str, dict[str, Any]]
"""A tool to call, with arguments sampled from its schema or given."""


class ScriptedChat(AnsweringChat):
    """A chat model that calls ``script``'s tools in turn, then answers.

    Past the script it answers "done", or, bound to a provider's structured output
    (``ProviderStrategy``), the JSON of a sample of the schema asked for.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    runs: Any  # Any: pydantic would copy a Counter, and the test would count nothing
    script: tuple[Step, ...] = ()
    key: str = "model"
    """The counter a call of this model adds to."""
    bound: tuple[Any, ...] = ()
    provider: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def answer(self, messages: list[BaseMessage]) -> AIMessage:
        self.runs[self.key] += 1
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        turn = sum(isinstance(m, AIMessage) for m in messages[last_human:])
        if turn < len(self.script):
            step = self.script[turn]
            name, args = step if isinstance(step, tuple) else (step, None)
            call = {"name": name, "args": args or self._sample(name), "id": f"{name}-{turn}"}
            message = AIMessage(content="", tool_calls=[call])
        elif self.provider is not None:
            message = AIMessage(content=json.dumps(_sample(self.provider["json_schema"]["schema"])))
        else:
            message = AIMessage(content="done")
        return message

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:  # type: ignore[override]
        return self.model_copy(
            update={"bound": tuple(tools), "provider": kwargs.get("response_format")}
        )

    def _sample(self, name: str) -> dict[str, Any]:
        for tool in self.bound:
            schema = convert_to_openai_tool(tool)["function"]
            if schema["name"] == name:
                sample: dict[str, Any] = _sample(schema.get("parameters", {}))
                return sample
        raise AssertionError(f"the script calls {name!r}, which is not bound")


def _sample(schema: dict[str, Any]) -> Any:
    """A value of every property a JSON schema names, optional ones too."""
    kind = schema.get("type")
    if kind is None and "anyOf" in schema:
        return _sample(next(s for s in schema["anyOf"] if s.get("type") != "null"))
    if kind == "object":
        return {key: _sample(sub) for key, sub in schema.get("properties", {}).items()}
    samples = {"string": "s", "number": 1.5, "integer": 1, "boolean": True, "array": []}
    return samples.get(kind, "s")


def counted_tool(
    runs: Counter[str],
    args: type[BaseModel],
    *,
    name: str = "search",
    crash_once: bool = False,
    calls: list[dict[str, Any]] | None = None,
) -> BaseTool:
    """A tool whose argument schema is ``args``; ``crash_once`` fails its first call;
    ``calls`` receives the arguments of each call."""

    def call(**kwargs: Any) -> str:
        runs[name] += 1
        if calls is not None:
            calls.append(kwargs)
        if crash_once and runs[name] == 1:
            raise Crash(name)
        return f"{name} {args(**kwargs).model_dump()}"

    return StructuredTool.from_function(call, name=name, description=name, args_schema=args)


class Audit(AgentMiddleware[Any, Any, Any]):
    """An ``after_model`` hook that only counts: its node then routes to the tools."""

    def __init__(self, runs: Counter[str]) -> None:
        super().__init__()
        self.runs = runs

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.runs["after_model"] += 1
        return None


class BudgetState(AgentState[Any]):
    """A middleware's own state field (its state extension)."""

    calls: NotRequired[int]


class BudgetStateV2(AgentState[Any]):
    """The same field, retyped by a later deploy."""

    calls: NotRequired[float]


def budget(runs: Counter[str], state: type[AgentState[Any]]) -> AgentMiddleware[Any, Any, Any]:
    """An ``after_model`` hook that counts the model calls into its own state field
    ``calls`` of ``state`` (a middleware state extension)."""

    class Budget(AgentMiddleware[Any, Any, Any]):
        state_schema = state

        def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            runs["budget"] += 1
            return {"calls": int(state.get("calls") or 0) + 1}

    return Budget()


def agent(
    runs: Counter[str],
    tools: Sequence[BaseTool],
    script: Sequence[Step],
    *,
    middleware: Sequence[Callable[[Counter[str]], AgentMiddleware[Any, Any, Any]]] = (),
    **kwargs: Any,
) -> Any:
    """``create_agent`` over a ``ScriptedChat`` following ``script``."""
    return create_agent(
        ScriptedChat(runs=runs, script=tuple(script)),
        list(tools),
        middleware=[make(runs) for make in middleware],
        **kwargs,
    )


def deep_agent(runs: Counter[str], sub_tools: Sequence[BaseTool]) -> Any:
    """``create_deep_agent`` whose model hands the question to a ``researcher`` sub-agent
    (through the ``task`` tool), which calls ``search`` once and answers."""
    researcher = {
        "name": "researcher",
        "description": "Researches.",
        "system_prompt": "Research.",
        "model": ScriptedChat(runs=runs, key="sub_model", script=("search",)),
        "tools": list(sub_tools),
    }
    task = ("task", {"description": "look it up", "subagent_type": "researcher"})
    return create_deep_agent(
        model=ScriptedChat(runs=runs, script=(task,)), tools=[], subagents=[researcher]
    )


class Approval(BaseModel):
    """The arguments of ``search`` and ``approve`` in ``approving_deep_agent``."""

    what: str


def approving_deep_agent(runs: Counter[str], findings: type[BaseModel]) -> Any:
    """``create_deep_agent`` handing the question to a ``researcher`` sub-agent answering
    ``findings`` (``ProviderStrategy``), which calls ``search``, then ``approve`` (it
    waits on ``interrupt()``), then answers."""

    def approve(**kwargs: Any) -> str:
        runs["approve"] += 1
        return f"approved: {interrupt('approve the findings?')}"

    approving = StructuredTool.from_function(
        approve, name="approve", description="approve", args_schema=Approval
    )
    researcher = {
        "name": "researcher",
        "description": "Researches.",
        "system_prompt": "Research.",
        "model": ScriptedChat(runs=runs, key="sub_model", script=("search", "approve")),
        "tools": [counted_tool(runs, Approval), approving],
        "response_format": ProviderStrategy(findings),
    }
    task = ("task", {"description": "look it up", "subagent_type": "researcher"})
    return create_deep_agent(
        model=ScriptedChat(runs=runs, script=(task,)), tools=[], subagents=[researcher]
    )


def artifact_tool(
    runs: Counter[str], args: type[BaseModel], artifact: type[BaseModel], *, name: str = "lookup"
) -> BaseTool:
    """A ``content_and_artifact`` tool declaring ``-> tuple[str, artifact]``; its artifact
    is a sample of ``artifact`` (every field set)."""

    def call(**kwargs: Any) -> Any:
        runs[name] += 1
        return f"{name} {kwargs}", artifact(**_sample(artifact.model_json_schema()))

    call.__annotations__["return"] = tuple[str, artifact]  # type: ignore[valid-type]
    return StructuredTool.from_function(
        call, name=name, description=name, args_schema=args, response_format="content_and_artifact"
    )
