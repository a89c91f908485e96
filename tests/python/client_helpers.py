"""Shared helpers for the Python MCP SDK scripts that the Rust integration tests run (see
docs/TESTING.md): start `dacli mcp serve` through the SDK's stdio client, read a tool
result's JSON, fail with a reason."""

import contextlib
import json
import os
import sys
from typing import AsyncIterator

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Variables passed through to the server: the test's pinned clock and seed, the agent token
# when a test runs as an agent, and PATH for the shortcuts' `sh`.
PASSED = ("DACLI_AGENT", "DACLI_TEST_CLOCK", "DACLI_TEST_SEED", "PATH", "HOME")


def fail(reason: str) -> None:
    print(f"FAILED: {reason}", file=sys.stderr)
    sys.exit(1)


@contextlib.asynccontextmanager
async def connect(binary: str, workspace: str, args: tuple = ()) -> AsyncIterator[ClientSession]:
    """An initialized SDK session with `dacli -C WORKSPACE mcp serve`."""
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    params = StdioServerParameters(
        command=binary,
        args=["-C", workspace, "mcp", "serve", *args],
        env=env,
        cwd=workspace,
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def payload(result) -> dict:
    """The JSON a tool result carries in its first text block; fails on an error result."""
    if result.is_error:
        fail(f"tool result is an error: {result.content}")
    text = result.content[0].text
    try:
        return json.loads(text)
    except ValueError:
        fail(f"tool result is not JSON: {text[:200]}")
        raise
