"""The supervisor of several HTTP server processes: it refuses a port another server listens
on (sockets sharing a port with SO_REUSEPORT would split its connections without a word)."""

from __future__ import annotations

import socket

import pytest
import uvicorn

from codebase_mcp_search.core.errors import ValidationFailed
from codebase_mcp_search.entrypoints.mcp.balanced import (
    BalancedGroup,
    balances,
    free_port,
    listening_socket,
)

pytestmark = pytest.mark.skipif(not balances(), reason="SO_REUSEPORT balancing is Linux's")


def test_a_port_in_use_is_refused_before_any_process_starts() -> None:
    other = listening_socket("127.0.0.1", 0, 8)  # another server, sharing-friendly even
    port = other.getsockname()[1]
    try:
        with pytest.raises(OSError):
            free_port("127.0.0.1", port)
        group = BalancedGroup(uvicorn.Config("x:y", host="127.0.0.1", port=port), 2)
        with pytest.raises(ValidationFailed) as refused:
            group.run()
        assert refused.value.field == "--port" and "another --port" in str(refused.value)
    finally:
        other.close()
    assert free_port("127.0.0.1", port) == port  # free again once it closed


def test_sockets_of_one_group_share_a_port() -> None:
    port = free_port("127.0.0.1", 0)
    first = listening_socket("127.0.0.1", port, 8)
    second = listening_socket("127.0.0.1", port, 8)
    try:
        assert first.getsockname()[1] == second.getsockname()[1] == port
        assert first.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        first.close()
        second.close()
