"""The seed's three canonical workflows (docs/MCP.md), driven by the official Python MCP SDK
against `dacli mcp serve`, one server process per agent as the design requires:

1. `work`: an rw agent reads its brief, claims the task, is refused `finish_task` while a
   criterion is unchecked (a normal result, not an error), checks the criteria, records a
   finding and finishes.
2. `read_only`: an ro agent's claim and finding work, and its owner mutation (`add_task`) comes
   back as a refusal result, not a protocol error.
3. `ask`: an agent asks on its task, root answers through its own server, and the answer's
   words are in the asker's brief.

Usage: python workflows.py DACLI_BINARY WORKSPACE WORKFLOW
Agent tokens come from DACLI_TEST_BUILDER_TOKEN and DACLI_TEST_RO_TOKEN. Prints one JSON line
with what each step returned; exits non-zero, with the reason on stderr, when a step does not
do what the workflow expects.
"""

import contextlib
import json
import os
import sys
from typing import AsyncIterator

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# What the server may see of the test's environment besides its own token.
PASSED = ("DACLI_TEST_CLOCK", "DACLI_TEST_SEED", "PATH", "HOME")


def fail(reason: str) -> None:
    print(f"FAILED: {reason}", file=sys.stderr, flush=True)
    # Leaves at once: an exit raised inside the SDK's task groups would bury the reason
    # under their tracebacks.
    os._exit(1)


@contextlib.asynccontextmanager
async def server(binary: str, workspace: str, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialized session with a server of its own, bound to `token` (root when None)."""
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    if token:
        env["DACLI_AGENT"] = token
    params = StdioServerParameters(
        command=binary, args=["-C", workspace, "mcp", "serve"], env=env, cwd=workspace
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **args) -> dict | str:
    """A tool result's payload: its JSON, or the Markdown of a brief. An error result fails
    the workflow: every step here is one a working agent takes."""
    result = await session.call_tool(tool, {"schema_version": 1, **args})
    text = result.content[0].text
    if result.is_error:
        fail(f"{tool} {args} is an error result: {text}")
    try:
        return json.loads(text)
    except ValueError:
        return text


def refused(payload, policy: str, step: str) -> dict:
    if not isinstance(payload, dict) or "refused" not in payload:
        fail(f"{step}: expected a refusal {policy}, got {payload}")
    if payload["refused"]["policy"] != policy:
        fail(f"{step}: refused by {payload['refused']['policy']}, not {policy}")
    if not payload["refused"].get("next"):
        fail(f"{step}: the refusal says nothing about what to do instead")
    return payload["refused"]


def not_refused(payload, step: str):
    if isinstance(payload, dict) and "refused" in payload:
        fail(f"{step}: refused: {payload['refused']}")
    return payload


async def work(binary: str, workspace: str) -> dict:
    out: dict = {}
    async with server(binary, workspace, os.environ["DACLI_TEST_BUILDER_TOKEN"]) as s:
        tools = await s.list_tools()
        out["tools"] = len(tools.tools)
        brief = await call(s, "get_context", ref="shop/1")
        if not isinstance(brief, str) or "# Task: Totals in cents" not in brief:
            fail(f"get_context is not the task's brief: {brief!r:.300}")
        out["brief_has_acceptance"] = "## Acceptance" in brief
        claim = not_refused(await call(s, "claim_task", ref="shop/1"), "claim_task")
        out["claim"] = claim.get("effect")
        early = refused(
            await call(s, "finish_task", ref="shop/1"), "dod.unchecked_acceptance", "finish_task"
        )
        out["early_finish"] = {"policy": "dod.unchecked_acceptance", "next": early["next"]}
        checked = not_refused(await call(s, "check_task", ref="shop/1", items=[1, 2]), "check_task")
        out["checked"] = checked.get("checked")
        note = not_refused(
            await call(
                s,
                "add_note",
                kind="finding",
                title="Refunds round twice",
                severity="major",
                about="shop/1",
                body="The refund path rounds before and after the fee.",
            ),
            "add_note",
        )
        out["note"] = note.get("effect")
        done = not_refused(
            await call(s, "finish_task", ref="shop/1", summary="Totals in integer cents"),
            "finish_task",
        )
        out["finish"] = {k: done.get(k) for k in ("status", "effect") if k in done}
    return out


async def read_only(binary: str, workspace: str) -> dict:
    out: dict = {}
    async with server(binary, workspace, os.environ["DACLI_TEST_RO_TOKEN"]) as s:
        me = await call(s, "whoami")
        out["grant"] = me["agent"]["grant"]
        claim = not_refused(await call(s, "claim_task", ref="shop/2"), "claim_task (ro)")
        out["claim"] = claim.get("effect")
        note = not_refused(
            await call(
                s,
                "add_note",
                kind="finding",
                title="Fees differ by region",
                severity="moderate",
                about="shop/2",
            ),
            "add_note (ro)",
        )
        out["note"] = note.get("effect")
        # The owner mutation: a result carrying the refusal, which the SDK does not raise.
        result = await s.call_tool("add_task", {"schema_version": 1, "title": "Sneaky task"})
        if result.is_error:
            fail(f"add_task as ro is an error result, not a refusal: {result.content[0].text}")
        r = refused(json.loads(result.content[0].text), "grant.read_only", "add_task (ro)")
        out["add_task"] = {"policy": "grant.read_only", "next": r["next"]}
        listed = await call(s, "list_tasks", all=True)
        out["titles"] = [row[2] for row in listed["tasks"]]
    return out


async def ask(binary: str, workspace: str) -> dict:
    out: dict = {}
    words = "Use half-even: it is what the ledger does."
    async with server(binary, workspace, os.environ["DACLI_TEST_BUILDER_TOKEN"]) as builder:
        asked = not_refused(
            await call(builder, "ask", ref="shop/3", question="Round half-even or half-up?"),
            "ask",
        )
        question = asked["question"]
        out["blocks"] = asked.get("blocks")
        async with server(binary, workspace, None) as root:
            answered = not_refused(
                await call(
                    root,
                    "answer",
                    question=question,
                    text=words,
                    **{"as": "decision"},
                    chose="half-even",
                    rejected="half-up",
                    because="ledger parity",
                ),
                "answer",
            )
            out["answered"] = bool(answered)
        brief = await call(builder, "get_context", ref="shop/3")
        if words not in brief:
            fail(f"the answer's words are not in the asker's brief:\n{brief}")
        out["brief_has_answer"] = True
        out["brief_has_rejected"] = "Rejected: half-up" in brief
    return out


WORKFLOWS = {"work": work, "read_only": read_only, "ask": ask}


def main() -> None:
    binary, workspace, name = sys.argv[1:4]
    result = anyio.run(WORKFLOWS[name], binary, workspace)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
