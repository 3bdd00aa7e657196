"""The HTTP request checks (``mcp.guards``) as rules: which Host, Origin and local address a
server with or without a token answers, and the settings that widen them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from codebase_mcp_search.entrypoints.mcp.guards import (
    Exposure,
    Refusal,
    check_request,
    is_loopback_name,
    split_host,
)
from codebase_mcp_search.entrypoints.settings import Settings

TOKEN_LESS = Exposure(has_token=False, has_roots=False, allowed_hosts=None, allowed_origins=None)
WITH_TOKEN = Exposure(has_token=True, has_roots=True, allowed_hosts=None, allowed_origins=None)


def _scope(host: str | None, origin: str | None = None, local: str = "127.0.0.1") -> Any:
    headers = [(b"host", host.encode())] if host is not None else []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": "http", "headers": headers, "server": (local, 3000), "client": ("x", 1)}


def _refused(exposure: Exposure, scope: Any) -> str | None:
    try:
        check_request(exposure, scope)
    except Refusal as refusal:
        return refusal.code
    return None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:3000", ("127.0.0.1", "3000")),
        ("LocalHost", ("localhost", "")),
        ("[::1]:3000", ("::1", "3000")),
        ("localhost.:80", ("localhost", "80")),
        ("evil.example.com", ("evil.example.com", "")),
    ],
)
def test_host_headers_split_into_name_and_port(value: str, expected: tuple[str, str]) -> None:
    assert split_host(value) == expected


@pytest.mark.parametrize(
    ("name", "loopback"),
    [
        ("localhost", True),
        ("app.localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("192.0.2.2", False),
        ("localhost.evil.example.com", False),
        ("evil.example.com", False),
        ("", False),
    ],
)
def test_loopback_names(name: str, loopback: bool) -> None:
    assert is_loopback_name(name) is loopback


@pytest.mark.parametrize(
    ("host", "origin", "code"),
    [
        ("127.0.0.1:3000", None, None),
        ("localhost:3000", "http://localhost:5173", None),
        ("[::1]:3000", "http://127.0.0.1:3000", None),
        # A client that is not a browser sends no Origin: Host alone decides.
        ("evil.example.com:3000", None, "HOST_NOT_ALLOWED"),
        ("evil.example.com:3000", "http://evil.example.com:3000", "HOST_NOT_ALLOWED"),
        ("127.0.0.1:3000", "http://evil.example.com:3000", "ORIGIN_NOT_ALLOWED"),
        ("127.0.0.1:3000", "null", "ORIGIN_NOT_ALLOWED"),
        ("127.0.0.1:3000", "file://", "ORIGIN_NOT_ALLOWED"),
        ("127.0.0.1:3000", "http://localhost:notaport", "ORIGIN_NOT_ALLOWED"),
        (None, None, "HOST_NOT_ALLOWED"),
    ],
)
def test_a_server_without_a_token_answers_loopback_names_only(
    host: str | None, origin: str | None, code: str | None
) -> None:
    assert _refused(TOKEN_LESS, _scope(host, origin)) == code


def test_the_allowed_lists_widen_the_names() -> None:
    exposure = Exposure(
        has_token=False,
        has_roots=False,
        allowed_hosts=["dev.example.com", "*.corp.example:8443"],
        allowed_origins=["https://ui.example.com"],
    )
    assert _refused(exposure, _scope("dev.example.com:3000")) is None
    assert _refused(exposure, _scope("a.corp.example:8443")) is None
    assert _refused(exposure, _scope("a.corp.example:9000")) == "HOST_NOT_ALLOWED"
    assert _refused(exposure, _scope("dev.example.com", "https://ui.example.com/")) is None
    assert _refused(exposure, _scope("dev.example.com", "http://ui.example.com")) == (
        "ORIGIN_NOT_ALLOWED"
    )


def test_a_server_with_a_token_leaves_names_to_the_token_unless_listed() -> None:
    assert _refused(WITH_TOKEN, _scope("proxy.example.com", "https://x.example")) is None
    listed = Exposure(
        has_token=True, has_roots=True, allowed_hosts=["proxy.example.com"], allowed_origins=None
    )
    assert _refused(listed, _scope("proxy.example.com")) is None
    assert _refused(listed, _scope("other.example.com")) == "HOST_NOT_ALLOWED"


def test_a_request_arriving_beyond_loopback_needs_a_token_and_roots() -> None:
    beyond = _scope("192.0.2.2:3000", local="192.0.2.2")
    assert _refused(TOKEN_LESS, beyond) == "EXPOSED_WITHOUT_TOKEN"
    no_roots = Exposure(has_token=True, has_roots=False, allowed_hosts=None, allowed_origins=None)
    assert _refused(no_roots, beyond) == "EXPOSED_WITHOUT_ROOTS"
    # Addressed by the very address it arrived on: no name to rebind.
    assert _refused(WITH_TOKEN, beyond) is None
    assert (
        _refused(
            Exposure(has_token=True, has_roots=True, allowed_hosts=[], allowed_origins=None), beyond
        )
        is None
    )


def test_allowed_hosts_and_origins_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBASE_MCP_ALLOWED_HOSTS", " Dev.Example.com, ,box:8080")
    monkeypatch.setenv("CODEBASE_MCP_ALLOWED_ORIGINS", "https://UI.example.com/")
    settings = Settings()
    assert settings.allowed_hosts == ["dev.example.com", "box:8080"]
    assert settings.allowed_origins == ["https://ui.example.com"]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("allowed_hosts", "http://dev.example.com", "is not a host name"),
        ("allowed_origins", "dev.example.com", "is not an origin"),
        ("allowed_origins", "https://dev.example.com/app", "is not an origin"),
    ],
)
def test_malformed_names_are_refused_with_the_form_expected(
    field: str, value: str, says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        Settings(**{field: value})
