// The TypeScript SDK's client, 1.x (`@modelcontextprotocol/sdk`) or 2.x
// (`@modelcontextprotocol/client`), against pi-mcp's fixture server.
// Usage: node ts_client.mjs (v1 | v2) (stdio SERVER_EXE | http URL) (auto | legacy)
// PI_TEST_DEPS names the folder `.ci/install-test-deps` installed the packages into. Over HTTP
// the client sends `Authorization: Bearer $PI_MCP_TOKEN` (the transport's `requestInit`), after
// checking that the server refuses it without.
import { createRequire } from "node:module";
import path from "node:path";

const [sdk, transportKind, target, mode] = process.argv.slice(2);
// A hung server fails the test instead of hanging it.
setTimeout(() => { console.error("timed out after 120 s"); process.exit(2); }, 120_000).unref();
const require = createRequire(path.join(process.env.PI_TEST_DEPS, "package.json"));
const RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const EXPECTED_TOOLS = ["add", "cancelled_calls", "count_steps", "echo", "explode", "fail",
  "most_overlap", "one_at_a_time", "one_at_a_time_runs", "pixel", "wait_for_cancel"];

let Client, StdioClientTransport, StreamableHTTPClientTransport;
if (sdk === "v1") {
  ({ Client } = require("@modelcontextprotocol/sdk/client/index.js"));
  ({ StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js"));
  ({ StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js"));
} else {
  ({ Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client"));
  ({ StdioClientTransport } = require("@modelcontextprotocol/client/stdio"));
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}
const textOf = (result) => result.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
const json = (value) => JSON.stringify(value);

const options = sdk === "v2" && mode === "auto" ? { versionNegotiation: { mode: "auto" } } : {};
const token = process.env.PI_MCP_TOKEN;
if (transportKind === "http" && token) {
  const refused = await new Client({ name: "no-token", version: "1.0.0" }, options)
    .connect(new StreamableHTTPClientTransport(new URL(target)))
    .then(() => false, (err) => { console.log(`refused without the token: ${err.message}`); return true; });
  check(refused, "the server took a client without the token");
}
const client = new Client({ name: `pi-mcp-interop-ts-${sdk}`, version: "1.0.0" }, options);
const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
const transport = transportKind === "stdio"
  ? new StdioClientTransport({ command: target, args: ["stdio"] })
  : new StreamableHTTPClientTransport(new URL(target), { requestInit });
await client.connect(transport);

const listed = (await client.listTools()).tools;
check(json(listed.map((t) => t.name)) === json(EXPECTED_TOOLS), `tools/list order: ${json(listed.map((t) => t.name))}`);
const tools = Object.fromEntries(listed.map((t) => [t.name, t]));
check(tools.echo.title === "Echo", `title: ${tools.echo.title}`);
check(json(tools.echo.annotations) === json({ readOnlyHint: true, idempotentHint: true, openWorldHint: false }),
  `echo annotations: ${json(tools.echo.annotations)}`);
check(tools.add.outputSchema.properties.sum.type === "integer", "add outputSchema");

let result = await client.callTool({ name: "echo", arguments: { text: "hi" } });
check(!result.isError && textOf(result) === "hi", `echo: ${json(result)}`);

// The SDK validates structuredContent against the outputSchema (with AJV).
result = await client.callTool({ name: "add", arguments: { a: 2, b: "3" } });
check(!result.isError && json(result.structuredContent) === json({ sum: 5 }), `add: ${json(result)}`);

result = await client.callTool({ name: "add", arguments: { a: "x" } });
check(result.isError === true, "invalid arguments are an error result");
check(textOf(result) === 'Validation failed for tool "add":\n  - b: missing required property\n  - a: expected integer; got "x"\n\nReceived arguments:\n{\n  "a": "x"\n}',
  `invalid: ${json(textOf(result))}`);

result = await client.callTool({ name: "fail", arguments: { reason: "disk full" } });
check(result.isError === true && textOf(result) === "disk full", `fail: ${json(result)}`);

result = await client.callTool({ name: "explode", arguments: {} });
check(result.isError === true && textOf(result) === "Tool explode panicked: boom", `explode: ${json(result)}`);

result = await client.callTool({ name: "pixel", arguments: {} });
check(result.content[0].type === "image" && result.content[0].mimeType === "image/png" && result.content[0].data === RED_PIXEL_PNG,
  `pixel: ${json(result)}`);

try {
  await client.callTool({ name: "ech", arguments: {} });
  throw new Error("an unknown tool must be a JSON-RPC error");
} catch (err) {
  check(err.code === -32602, `unknown tool code ${err.code}: ${err.message}`);
  check(err.message.includes('Tool ech not found (did you mean "echo"?)'), `unknown tool: ${err.message}`);
}

const progress = [];
const requestOptions = { onprogress: (p) => progress.push(p) };
result = sdk === "v1"
  ? await client.callTool({ name: "count_steps", arguments: { steps: 3 } }, undefined, requestOptions)
  : await client.callTool({ name: "count_steps", arguments: { steps: 3 } }, requestOptions);
check(textOf(result) === "counted 3 steps", `count_steps: ${json(result)}`);
check(json(progress.map((p) => p.message)) === json(["step 1", "step 2", "step 3"]), `progress: ${json(progress)}`);
check(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), `progress increases: ${json(progress)}`);

const cancelledCount = async () => Number(textOf(await client.callTool({ name: "cancelled_calls", arguments: {} })));
const before = await cancelledCount();
const abort = new AbortController();
const call = sdk === "v1"
  ? client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, { signal: abort.signal })
  : client.callTool({ name: "wait_for_cancel", arguments: {} }, { signal: abort.signal });
await new Promise((resolve) => setTimeout(resolve, 500));
abort.abort("the test cancels");
await call.then(() => { throw new Error("a cancelled call must not resolve"); }, () => {});
let seen = false;
for (let i = 0; i < 100 && !seen; i++) {
  seen = (await cancelledCount()) === before + 1;
  if (!seen) await new Promise((resolve) => setTimeout(resolve, 100));
}
check(seen, "the server never saw the cancellation");

console.log(`ok ts-${sdk} ${transportKind} ${client.getNegotiatedProtocolVersion?.() ?? ""}`);
await client.close();
