"""Backends: how one chat-completions request body reaches a server.

A backend sends a pre-serialised OpenAI chat-completions body and returns a :class:`ChatReply`,
or raises :class:`BackendError` saying what went wrong (status, server message, Retry-After).
Retries, re-asks, caching and usage live in the LLM judge, so a new provider is one file here
plus one entry in :data:`BACKENDS`.

The package by meaning: ``base.py`` the contract (:class:`ChatBackend`, :class:`ChatReply`,
:class:`BackendError`, :class:`Endpoint`, :class:`RequestBody`) and the HTTP handling every
backend shares; ``openai_format.py`` OpenAI's chat-completions replies and error bodies;
``registry.py`` :data:`BACKENDS` and :data:`PROVIDERS`; ``http.py`` (aiohttp, the default),
``openai_sdk.py`` and ``anthropic.py`` the backends. The names are re-exported here.
"""
from __future__ import annotations

from .base import (
    BODY_TOO_LARGE,
    MAX_BODY_BYTES,
    MAX_REDIRECTS,
    MESSAGE_CHARS,
    REDIRECTS,
    REFUSED,
    BackendError,
    ChatBackend,
    ChatReply,
    Endpoint,
    ErrorKind,
    RequestBody,
    endpoint,
    one_line,
    read_body,
    redirect_problem,
    retry_after_seconds,
    server_host,
)
from .openai_format import REASONING_FIELDS, answer_text, error_message, last_json_object, parse_completion
from .registry import BACKENDS, PROVIDERS, Provider, provider_of, self_hosted

__all__ = [
    "BACKENDS", "BODY_TOO_LARGE", "MAX_BODY_BYTES", "MAX_REDIRECTS", "MESSAGE_CHARS", "PROVIDERS",
    "REASONING_FIELDS", "REDIRECTS", "REFUSED", "BackendError", "ChatBackend", "ChatReply", "Endpoint", "ErrorKind",
    "Provider", "RequestBody", "answer_text", "endpoint", "error_message", "last_json_object", "one_line",
    "parse_completion", "provider_of", "read_body", "redirect_problem", "retry_after_seconds", "self_hosted",
    "server_host",
]
