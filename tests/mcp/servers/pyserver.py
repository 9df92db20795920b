"""MCP servers for taper's MCP client tests, written with the official `mcp` package (2.x).

    pyserver.py tools            MCPServer (FastMCP's successor) with friendly and hostile tools
    pyserver.py calc             MCPServer with `add` alone, for the end-to-end tests with a model
    pyserver.py many N           the low-level Server: N tools, 100 to a tools/list page
    pyserver.py version V        a hand-written JSON-RPC loop that answers initialize with V
                                 (and writes garbage to stdout when asked to call `garbage`)
    pyserver.py exit             writes to stderr and exits 3 at once

The tools mode writes a line to the file named by $TAPER_MCP_MARK when a call is cancelled,
so a test can see the server received notifications/cancelled.
"""

import asyncio
import base64
import json
import os
import sys


def tools_server():
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.utilities.types import Image

    server = MCPServer("taper-test")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Says the text back."""
        return text

    @server.tool()
    async def hang(seconds: float = 3600) -> str:
        """Sleeps; records a cancellation in $TAPER_MCP_MARK."""
        try:
            await asyncio.sleep(seconds)
        except BaseException:
            mark = os.environ.get("TAPER_MCP_MARK")
            if mark:
                with open(mark, "a") as f:
                    f.write("cancelled\n")
            raise
        return "slept"

    @server.tool()
    def crash() -> str:
        """Exits the server in the middle of the call."""
        sys.stderr.write("crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    def huge(megabytes: int) -> str:
        """Answers with a text of that many megabytes."""
        return "x" * (megabytes * 1024 * 1024)

    @server.tool()
    def fail() -> str:
        """Always fails: the result has isError. (Only a ToolError's message reaches the
        client; any other exception is reported as "Error executing tool fail".)"""
        raise ToolError("the tool failed on purpose")

    @server.tool()
    def image() -> Image:
        """A 12 KiB PNG-typed image."""
        return Image(data=b"\x89PNG" + b"\0" * (12 * 1024 - 4), format="png")

    @server.tool()
    def flood(megabytes: int) -> str:
        """Writes that many megabytes to stderr, then answers."""
        line = "e" * 1023 + "\n"
        for _ in range(megabytes * 1024):
            sys.stderr.write(line)
        sys.stderr.flush()
        return "flooded"

    @server.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Adds a tool NAME and says the tool list changed."""

        def added(text: str) -> str:
            return text

        server.add_tool(added, name=name, description="A tool added at run time.")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    async def ping_client(ctx: Context) -> str:
        """Pings the client and says whether it answered."""
        await asyncio.wait_for(ctx.session.send_ping(), 10)
        return "the client answered ping"

    server.run("stdio")


def many_server(count):
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    page = 100
    tools = [
        types.Tool(
            name=f"tool_{i:03}",
            description=f"Tool number {i}.",
            input_schema={"type": "object", "properties": {}},
        )
        for i in range(count)
    ]

    async def list_tools(ctx, params):
        start = int(params.cursor) if params and params.cursor else 0
        end = start + page
        more = str(end) if end < count else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=more)

    async def call_tool(ctx, params):
        text = f"{params.name} called"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server("taper-many", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def version_server(version):
    """The smallest server that answers with a chosen protocol version."""
    echo = {
        "name": "echo",
        "description": "Says the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "versioned", "version": "1"},
            }
        elif method == "tools/list":
            garbage = {"name": "garbage", "inputSchema": {"type": "object"}}
            result = {"tools": [echo, garbage]}
        elif method == "tools/call" and message["params"].get("name") == "garbage":
            # Lines that are not JSON-RPC on stdout, then the answer. (Only a hand-written
            # server can: the mcp package's stdio transport points fd 1 at stderr.)
            sys.stdout.write("this is not json\nneither {is this\n")
            result = {"content": [{"type": "text", "text": "still fine"}]}
        elif method == "tools/call":
            text = message["params"]["arguments"].get("text", "")
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        reply = {"jsonrpc": "2.0", "id": ident, "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def calc_server():
    """One friendly tool, for a model to call in the end-to-end tests."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("taper-calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    server.run("stdio")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "tools"
    if mode == "calc":
        calc_server()
    elif mode == "tools":
        tools_server()
    elif mode == "many":
        many_server(int(sys.argv[2]))
    elif mode == "version":
        version_server(sys.argv[2])
    elif mode == "exit":
        sys.stderr.write("exiting at once on purpose\n")
        sys.exit(3)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
