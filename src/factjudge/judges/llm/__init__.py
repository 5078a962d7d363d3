"""The LLM judge: prompts to a chat backend, token counting, the response cache."""
from .judge import LLMJudge

__all__ = ["LLMJudge"]
