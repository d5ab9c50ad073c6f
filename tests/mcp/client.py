"""A real MCP client from another ecosystem (the official Python SDK, pinned in
tests/mcp/requirements.txt) driving `odek mcp serve` over stdio, or `odek serve --mcp` over
streamable HTTP, for the integration tests.

Usage: python client.py ODEK [ARG...] < calls.json         (stdio: starts the server)
       ODEK_MCP_TOKEN=T python client.py http://… < calls.json  (streamable HTTP, Bearer T)
calls.json: [{"name": "read_file", "arguments": {...}, "repeat": 1}, ...]
Prints one JSON object: the server's name, the tools it lists, each call's text and
is_error (or the protocol error the SDK raised), and each call's latency in milliseconds
(the median of its repeats).
"""

import json
import os
import statistics
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def transport():
    """stdio to a server this script starts, or streamable HTTP to a URL."""
    if sys.argv[1].startswith("http://"):
        headers = {"Authorization": f"Bearer {os.environ.get('ODEK_MCP_TOKEN', '')}"}
        return streamable_http_client(sys.argv[1], http_client=create_mcp_http_client(headers=headers))
    env = {k: v for k, v in os.environ.items() if k.startswith("ODEK_") or k in ("TMPDIR", "HOME", "PATH")}
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=env, cwd=os.getcwd())
    return stdio_client(server)


async def main() -> None:
    calls = json.load(sys.stdin)
    out = {"results": []}
    async with transport() as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            listed = await session.list_tools()
            out["tools"] = [t.name for t in listed.tools]
            out["schemas"] = {t.name: t.input_schema for t in listed.tools}
            for call in calls:
                times = []
                result = None
                try:
                    for _ in range(call.get("repeat", 1)):
                        started = time.perf_counter()
                        result = await session.call_tool(call["name"], call.get("arguments", {}))
                        times.append((time.perf_counter() - started) * 1000)
                except Exception as e:  # a protocol error (an unknown tool): the SDK raises
                    out["results"].append({"name": call["name"], "protocol_error": str(e)})
                    continue
                text = "".join(getattr(c, "text", "") for c in result.content)
                out["results"].append(
                    {"name": call["name"], "text": text, "is_error": bool(result.is_error), "ms": statistics.median(times)}
                )
    print(json.dumps(out))


anyio.run(main)
