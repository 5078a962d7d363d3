"""The LLM judge: prompts to a chat backend, token counting, the response cache, and its config
objects (:class:`Sampling`, :class:`Transport`, :class:`RetryPolicy`)."""
from .judge import LLMJudge
from .retry import RetryPolicy
from .settings import Sampling, Transport

__all__ = ["LLMJudge", "RetryPolicy", "Sampling", "Transport"]
