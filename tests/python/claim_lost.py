"""The loser of a claim across clones, as an MCP client sees it (run by
tests/it/machines_claims.rs): after an exchange, `get_context` for the task it claimed says
its claim lost and what to do next, and `task show` / `next` through `cli` carry the
`claim_lost` notice. Prints one JSON line with what it saw.

Usage: claim_lost.py DACLI_BINARY WORKSPACE TASK_REF (DACLI_AGENT: the loser's token)."""

import asyncio
import json
import sys

from client_helpers import connect, fail, payload


async def main(binary: str, workspace: str, ref: str) -> None:
    out: dict = {}
    async with connect(binary, workspace) as s:
        result = await s.call_tool("get_context", {"schema_version": 1, "ref": ref})
        if result.is_error:
            fail(f"get_context is an error result: {result.content}")
        brief = result.content[0].text
        lost = [line for line in brief.splitlines() if "Your claim lost" in line]
        out["lost_lines"] = lost
        out["won_lines"] = [line for line in brief.splitlines() if "claim won" in line.lower()]
        shown = payload(
            await s.call_tool("cli", {"schema_version": 1, "argv": ["task", "show", ref]})
        )
        shown = shown.get("data", shown)
        out["show_notices"] = shown.get("notices", [])
        picked = payload(await s.call_tool("cli", {"schema_version": 1, "argv": ["next"]}))
        picked = picked.get("data", picked)
        out["next_notices"] = [n for n in picked.get("notices", []) if n["code"] == "claim_lost"]
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail("usage: claim_lost.py DACLI_BINARY WORKSPACE TASK_REF")
    asyncio.run(main(*sys.argv[1:]))
