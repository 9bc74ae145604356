"""MCP (and the REST upload) spoken directly over HTTP, one connection per call: for
tests that send what a well-behaved client would not, or that need the exact headers
and `_meta` of a call."""

from __future__ import annotations

import http.client
import json
import secrets
import urllib.error
import urllib.request

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-11-25"}


def post(base: str, body: bytes, token: str | None = None, timeout: float = 30, **extra) -> tuple[int, dict, bytes]:
    """POSTs to `base`/mcp; the answer is read even when the server stops reading the
    body early (as it does past the size limit)."""
    headers = dict(HEADERS, **extra)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=timeout)
    try:
        connection.putrequest("POST", "/mcp", skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        try:
            connection.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def call_body(tool: str, arguments: dict, meta: dict | None = None) -> bytes:
    params: dict = {"name": tool, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def call(base: str, token: str, tool: str, arguments: dict, meta: dict | None = None, timeout: float = 30,
         **headers) -> dict:
    """A tool call's `{ ok, ... }` result."""
    status, _, body = post(base, call_body(tool, arguments, meta), token, timeout=timeout, **headers)
    assert status == 200, (status, body)
    return json.loads(body)["result"]["structuredContent"]


def post_form(url: str, headers: dict, parts: list[tuple[str, str | None, bytes, str | None]]) -> tuple[int, dict]:
    """POSTs multipart/form-data (name, file name, bytes, content type per part);
    returns the status and the JSON body."""
    boundary = secrets.token_hex(16)
    body = b""
    for name, file_name, data, content_type in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{file_name}"' if file_name else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()
        if content_type:
            body += f"Content-Type: {content_type}\r\n".encode()
        body += b"\r\n" + data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        **headers, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text.startswith(b"{") else {}
