"""What agent builders build, as neograph-ext fingerprints it: LangGraph's prebuilt
``ToolNode`` and ``create_react_agent``, langchain's ``create_agent``, deep agents'
``task`` tool.

Rules:
- None of it is public API: it was read from the source of langgraph-prebuilt 1.1.3,
  langchain 1.5.2 and deepagents 0.7.32 (``_langgraph.CHECKED_ON``), and
  ``tests/unit/test_agent_knowledge.py`` checks each piece against the installed
  libraries, failing loudly when it changes.
- A node is recognised by the module and name of its function, never guessed; each
  function degrades to "not known" (``None``, ``False``), and the stamp then falls back
  to what the node's annotations and edges say.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

__all__ = [
    "RESPONSE_CHANNEL",
    "makes_tool_calls",
    "overwrites",
    "prebuilt_output",
    "response_schema",
    "sub_agents",
    "tool_callables",
    "tool_objects",
    "tool_schemas",
]

_MODEL_CALLS = frozenset(
    {
        # create_agent: ``model``, wrapped by any before/after_model middleware nodes.
        ("langchain.agents.factory", "create_agent.<locals>.model_node"),
        # create_react_agent: ``agent``, wrapped by its pre/post_model_hook nodes.
        ("langgraph.prebuilt.chat_agent_executor", "create_react_agent.<locals>.call_model"),
    }
)

RESPONSE_CHANNEL = "structured_response"
"""Where ``create_agent`` keeps the structured response. Its state schema types it with
an unresolved type variable, and its model node writes None there on every call that
produced no structured response (so a stale value of an earlier turn is cleared): a None
written there is no value of the response type."""


def makes_tool_calls(runnable: object) -> bool:
    """Whether a node is an agent builder's model call: the node whose messages carry the
    tool calls its ``ToolNode`` runs, even when middleware nodes between them route.

    ``create_agent`` with an ``after_model`` hook routes to ``tools`` from the hook's
    node (``Audit.after_model``); ``create_react_agent`` with a ``post_model_hook`` from
    ``post_model_hook``. The model node itself then has no edge to the tools.
    """
    fn = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
    return (getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)) in _MODEL_CALLS


def response_schema(runnable: object) -> object | None:
    """For ``create_agent``'s model node: the schema its ``response_format`` asks for.

    A bare schema is wrapped in an ``AutoStrategy``; ``ToolStrategy`` and
    ``ProviderStrategy`` keep the schema given (a model, a union of models, a TypedDict,
    a dataclass or a JSON schema) as ``schema``.

    Returns:
        The schema, or None for any other node and for an agent without one.
    """
    fn = getattr(runnable, "func", None)
    if not inspect.isfunction(fn) or (fn.__module__, fn.__qualname__) not in _MODEL_CALLS:
        return None
    strategy = inspect.getclosurevars(fn).nonlocals.get("initial_response_format")
    schema: object | None = getattr(strategy, "schema", None)
    return schema


def overwrites(runnable: object) -> frozenset[str]:
    """The channels a node writes on every call without reading them first.

    ``create_agent``'s model node with a ``response_format`` writes ``RESPONSE_CHANNEL``
    on every call (the response, or None "to avoid a stale value from a previous
    checkpointed turn") and reads only the messages; a ``wrap_model_call`` middleware
    is handed the whole state, so with one the node may read it.

    Returns:
        ``{RESPONSE_CHANNEL}`` for such a model node; empty for any other node.
    """
    if response_schema(runnable) is None:
        return frozenset()
    for attr in ("func", "afunc"):
        fn = getattr(runnable, attr, None)
        if not inspect.isfunction(fn):
            continue
        found = inspect.getclosurevars(fn).nonlocals
        if found.get("wrap_model_call_handler") or found.get("awrap_model_call_handler"):
            return frozenset()
    return frozenset({RESPONSE_CHANNEL})


def sub_agents(tool: object) -> dict[str, object] | None:
    """For deepagents' ``task`` tool: the compiled sub-agent graphs it runs, by name.

    A sub-agent runs inside the ``task`` tool call, so inside the parent's tools node:
    what it did is stored as that node's result, never as a node of the parent.

    Returns:
        None for any other tool.
    """
    fn = getattr(tool, "func", None)
    if (
        not inspect.isfunction(fn)
        or fn.__module__ != "deepagents.middleware.subagents"
        or fn.__name__ != "task"
    ):
        return None
    graphs = inspect.getclosurevars(fn).nonlocals.get("subagent_graphs")
    return dict(graphs) if isinstance(graphs, Mapping) else None


def tool_objects(runnable: object) -> dict[str, object] | None:
    """For a prebuilt ``ToolNode``: its bound tools, by name; None for any other node."""
    tools = getattr(runnable, "tools_by_name", None)
    if type(runnable).__name__ != "ToolNode" or not isinstance(tools, Mapping):
        return None
    return dict(tools)


def tool_callables(runnable: object) -> dict[str, object] | None:
    """For a prebuilt ``ToolNode``: the function each bound tool runs, by tool name, whose
    return annotation says what the tool returns (what its ``ToolMessage`` is made of:
    the content, and the artifact of a ``content_and_artifact`` tool).

    A ``StructuredTool`` or ``Tool`` (``@tool``) runs its ``func``, or its ``coroutine``
    when it has no ``func``; any other ``BaseTool`` its class's ``_run``.

    Returns:
        None for any other node; a tool whose function is not found is left out.
    """
    tools = tool_objects(runnable)
    if tools is None:
        return None
    found: dict[str, object] = {}
    for name, tool in tools.items():
        fn = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
        fn = fn or getattr(type(tool), "_run", None)
        if callable(fn):
            found[name] = fn
    return found


def tool_schemas(runnable: object) -> dict[str, object] | None:
    """For a prebuilt ``ToolNode``: each bound tool's argument schema, by tool name.

    Returns:
        None for any other node. A schema is a pydantic model class, or a JSON schema
        (a mapping) for tools declared that way.
    """
    tools = tool_objects(runnable)
    if tools is None:
        return None
    return {name: getattr(tool, "args_schema", None) for name, tool in tools.items()}


def prebuilt_output(runnable: object) -> object | None:
    """For ``create_react_agent``'s ``generate_structured_response`` node: the
    ``response_format`` it was built with (its annotation is only the state schema).

    Returns:
        The structured response's type, or None for any other node.
    """
    fn = getattr(runnable, "func", None)
    if (
        not inspect.isfunction(fn)
        or fn.__name__ != "generate_structured_response"
        or fn.__module__ != "langgraph.prebuilt.chat_agent_executor"
    ):
        return None
    response_format: object = inspect.getclosurevars(fn).nonlocals.get("response_format")
    if isinstance(response_format, tuple) and len(response_format) == 2:
        schema: object = response_format[1]  # (system prompt, schema)
        return schema
    return response_format
