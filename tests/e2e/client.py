"""A thin layer over the official MCP Python SDK: one session per identity, and every
result checked against the protocol's shapes and the official JSON Schemas."""

from __future__ import annotations

import json
import os
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import jsonschema
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = Path(os.environ.get("AGENTPROCESS_SCHEMAS", REPO.parent / "shared" / "agentprocess" / "schemas" / "core-2"))


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


RUN_VIEW = _validator("run-view.json")
WORK_ITEM = _validator("work-item.json")
RUN_DATA = _validator("run-data.json")
TOOL_ERROR = _validator("tool-error.json")

RUN_VIEW_TOOLS = {"start_run", "get_run", "submit", "decide", "escalate", "cancel"}

# Every tool's official result schema (`tools/<tool>.result.json`), as index.json lists them.
TOOL_RESULT = {
    tool: _validator(files["result"])
    for tool, files in json.loads((SCHEMAS / "index.json").read_text())["tools"].items()
}


class ToolFailed(Exception):
    """A `{ ok: false }` result where success was expected."""

    def __init__(self, tool: str, error: dict):
        super().__init__(f"{tool}: {error}")
        self.tool = tool
        self.error = error


def check_result(tool: str, result: dict, is_error: bool) -> None:
    """Every result is `{ ok, data }` (valid against the tool's official result schema)
    or `{ ok: false, error }` (valid against `tool-error.json`)."""
    assert set(result) == ({"ok", "error"} if not result.get("ok") else {"ok", "data"}), result
    assert is_error == (not result["ok"]), f"isError {is_error} on {result}"
    if not result["ok"]:
        TOOL_ERROR.validate(result["error"])
        return
    data = result["data"]
    TOOL_RESULT[tool].validate(data)
    if tool in RUN_VIEW_TOOLS:
        RUN_VIEW.validate(data)
    elif tool == "claim":
        RUN_DATA.validate(data["data"])
    elif tool == "get_work":
        for item in data["items"]:
            if "workItem" in item:
                WORK_ITEM.validate(item["workItem"])


class Client:
    """An MCP session for one identity."""

    def __init__(self, session: ClientSession, name: str):
        self.session = session
        self.name = name

    async def raw(self, tool: str, **arguments) -> dict:
        """The structured result, checked. An argument given as None is left out (the
        official schemas allow no null), so `cursor=None` asks for a first page."""
        arguments = {name: value for name, value in arguments.items() if value is not None}
        result = await self.session.call_tool(tool, arguments)
        structured = result.structured_content
        assert structured is not None, f"{tool} gave no structured content"
        assert json.loads(result.content[0].text) == structured
        check_result(tool, structured, bool(result.is_error))
        return structured

    async def call(self, tool: str, **arguments) -> dict:
        """`data` of a successful call; raises ToolFailed otherwise."""
        result = await self.raw(tool, **arguments)
        if not result["ok"]:
            raise ToolFailed(tool, result["error"])
        return result["data"]

    async def error(self, tool: str, **arguments) -> dict:
        """`error` of a call expected to fail."""
        result = await self.raw(tool, **arguments)
        assert not result["ok"], f"{tool} unexpectedly succeeded: {result}"
        return result["error"]


def request_id() -> str:
    return str(uuid.uuid4())


async def connect(stack: AsyncExitStack, url: str, token: str, name: str) -> Client:
    http = await stack.enter_async_context(create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}))
    streams = await stack.enter_async_context(streamable_http_client(url, http_client=http))
    read, write = streams[0], streams[1]
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return Client(session, name)
