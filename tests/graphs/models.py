"""What the chat models of the test graphs share: one answer per call, no network, no keys.

A subclass names its ``_llm_type`` and writes ``answer``; LangChain's plumbing around a
call (``_generate`` and its result) is written once here.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class AnsweringChat(BaseChatModel):
    """A chat model whose every call returns the message ``answer`` builds."""

    def answer(self, messages: list[BaseMessage]) -> AIMessage:
        """The reply to ``messages``."""
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.answer(messages))])
