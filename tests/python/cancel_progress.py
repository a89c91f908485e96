"""The official Python MCP SDK drives `dacli mcp serve`: it lists the tools, receives progress
for a slow `run_shortcut`, cancels another one (the SDK sends `notifications/cancelled` when
the awaiting task is cancelled) and finds the server still answering and the cancelled
command's background child never finishing its work.

Usage: python cancel_progress.py DACLI_BINARY WORKSPACE MARKER
The workspace has shortcuts `slow` (sleeps ~3 s) and `late` (a background child touches MARKER
after 3 s while the shortcut sleeps 30 s). Prints one JSON summary line; exits non-zero, with
the reason on stderr, when any check fails.
"""

import json
import os
import sys
import time

import anyio

from client_helpers import connect, fail, payload


async def main(binary: str, workspace: str, marker: str) -> dict:
    summary: dict = {}
    async with connect(binary, workspace) as session:
        listed = await session.list_tools()
        names = [t.name for t in listed.tools]
        if "run_shortcut" not in names or "whoami" not in names:
            fail(f"tools/list lacks run_shortcut or whoami: {names}")
        summary["tools"] = len(names)

        steps: list = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append([progress, total, message])

        result = await session.call_tool(
            "run_shortcut",
            {"schema_version": 1, "name": "slow"},
            progress_callback=on_progress,
        )
        ran = payload(result)
        if ran.get("exit_code") != 0:
            fail(f"the slow shortcut did not succeed: {ran}")
        if len(steps) < 2:
            fail(f"expected progress at the start and each second, got {steps}")
        values = [s[0] for s in steps]
        if any(b <= a for a, b in zip(values, values[1:])):
            fail(f"progress must rise strictly: {values}")
        summary["progress"] = steps

        with anyio.move_on_after(1.0) as scope:
            await session.call_tool("run_shortcut", {"schema_version": 1, "name": "late"})
        if not scope.cancelled_caught:
            fail("the `late` shortcut answered instead of running until cancelled")

        started = time.monotonic()
        await session.send_ping()
        who = payload(await session.call_tool("whoami", {"schema_version": 1}))
        summary["answered_after_cancel_s"] = round(time.monotonic() - started, 3)
        if summary["answered_after_cancel_s"] > 2.0:
            fail(f"the server answered {summary['answered_after_cancel_s']} s after the cancel")
        summary["whoami"] = who.get("agent", who)

        await anyio.sleep(3.5)
        if os.path.exists(marker):
            fail("the cancelled shortcut's background child survived and wrote its file")
        summary["marker_written"] = False
    return summary


if __name__ == "__main__":
    binary, workspace, marker = sys.argv[1:4]
    print(json.dumps(anyio.run(main, binary, workspace, marker)))
