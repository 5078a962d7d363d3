"""The backends by name (:data:`BACKENDS`, the CLI's ``--backend`` choices) and their providers
(:data:`PROVIDERS`: default server, key and URL variables, what the provider caches and batches)."""
from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from .base import ChatBackend, Endpoint


def _http(ep: Endpoint, **kw: object) -> ChatBackend:
    from .http import HTTPBackend  # aiohttp is loaded by the runs that send requests
    return HTTPBackend(ep, **kw)


def _openai_sdk(ep: Endpoint, **kw: object) -> ChatBackend:
    from .openai_sdk import OpenAISDKBackend  # the openai extra, only when chosen
    return OpenAISDKBackend(ep, **kw)


def _anthropic(ep: Endpoint, **kw: object) -> ChatBackend:
    from .anthropic import AnthropicBackend
    return AnthropicBackend(ep, **kw)


#: Backend name -> factory(endpoint, **options). Imported lazily: the default never loads openai.
BACKENDS: dict[str, Callable[..., ChatBackend]] = {"http": _http, "openai-sdk": _openai_sdk,
                                                   "anthropic": _anthropic}


@dataclass(frozen=True)
class Provider:
    """Where a backend sends when no base URL is given, and the environment variables its API key
    and base URL are read from."""

    base_url: str = "https://api.openai.com/v1"
    key_env: str = "OPENAI_API_KEY"
    url_env: str = "OPENAI_BASE_URL"
    #: ``--pin-id auto`` pins the judged id on a self-hosted server: an OpenAI-compatible one
    #: (llama.cpp, vLLM, Ollama) compiles the schema per request and caches only the prompt.
    #: Anthropic's Messages API caches the output schema with the prompt, so a schema per question
    #: would cost the cached prefix ("changing output_format invalidates the prompt cache",
    #: https://platform.claude.com/docs/en/build-with-claude/structured-outputs): never pinned on auto.
    auto_pin: bool = True
    #: Its requests can go to OpenAI's Files and Batches endpoints as batch lines (``--batch``):
    #: chat-completions bodies. Anthropic's Messages are not (its Message Batches API is not supported).
    openai_batch: bool = True


#: The backends whose provider is not OpenAI's (as the Anthropic SDK reads its key and URL).
PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider("https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                          auto_pin=False, openai_batch=False)}


def provider_of(backend: object) -> Provider:
    """The provider of a backend given by name or as an object (by its ``name``)."""
    name = backend if isinstance(backend, str) else getattr(backend, "name", "")
    return PROVIDERS.get(name, Provider()) if isinstance(name, str) else Provider()


def self_hosted(base_url: str | None) -> bool:
    """Whether the server is one's own, by its address alone: a loopback, private or link-local
    IP, ``localhost``, or a name without a dot (a container or machine on one's network:
    ``http://vllm:8000/v1``). That is where llama.cpp, vLLM and Ollama run, which compile the
    response schema into a grammar per request; a hosted provider is reached by a public name.
    A gateway on one's own machine in front of a hosted provider is the exception
    (``--pin-id never``)."""
    host = (urlparse(base_url).hostname or "") if base_url else ""
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost") or "." not in host and ":" not in host:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local
