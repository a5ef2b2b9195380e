"""Model backends: OpenAI-compatible HTTP servers, and local transformers models."""

from llm_bridge.clients.base import Backend, ChatMessages, Completion

__all__ = ["Backend", "ChatMessages", "Completion"]
