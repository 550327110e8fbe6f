"""The MCP server (`mnemostream mcp`): mnemostream's memory as Model Context Protocol tools,
built with the official `mcp` SDK's high-level server (`MCPServer`), over stdio or streamable
HTTP. Install the extra: `pip install 'mnemostream[mcp]'`.

Modules: `tenancy` (whose memory a call reaches: the configuration and, over HTTP, the
gateway credential; never a tool argument), `auth` (the gateway's credentials as the SDK's
bearer-token check), `models` (the tools' answers), `tools` (the six tools on the SDK's
`MemoryClient`) and `server` (the composition root and the two transports). Like the gateway,
it talks to the pipeline over Kafka only.
"""
