// Records pi 0.73.1's own system prompts and context-file discovery (npm
// @mariozechner/pi-coding-agent), for ../../system_prompt.rs to compare against.
// Usage: node record.mjs <dir with node_modules> <output dir>
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import { join, relative } from "path";
import { pathToFileURL } from "url";

const [root, out] = process.argv.slice(2);
const dist = join(root, "node_modules/@mariozechner/pi-coding-agent/dist");
const load = async (file) => import(pathToFileURL(join(dist, file)).href);
const { buildSystemPrompt } = await load("core/system-prompt.js");
const { loadProjectContextFiles } = await load("core/resource-loader.js");
const { createAllToolDefinitions } = await load("core/tools/index.js");

// What agent-session.ts's _rebuildSystemPrompt passes: each active tool's snippet and guidelines.
const definitions = createAllToolDefinitions("/tmp");
function prompt(selectedTools, extra) {
	const toolSnippets = {};
	const promptGuidelines = [];
	for (const name of selectedTools) {
		const definition = definitions[name];
		if (!definition) continue;
		if (definition.promptSnippet) toolSnippets[name] = definition.promptSnippet;
		promptGuidelines.push(...(definition.promptGuidelines ?? []));
	}
	return buildSystemPrompt({ cwd: "/home/user/project", selectedTools, toolSnippets, promptGuidelines, ...extra });
}
const contextFiles = [
	{ path: "/home/user/.pi/agent/AGENTS.md", content: "Global rules." },
	{ path: "/home/user/project/CLAUDE.md", content: "Use cargo nextest.\n" },
];
const cases = [
	{ name: "default tools", tools: ["read", "bash", "edit", "write"] },
	{ name: "all seven, context files", tools: ["read", "bash", "edit", "write", "grep", "find", "ls"], contextFiles },
	{ name: "read-only", tools: ["read", "grep", "find", "ls"] },
	{ name: "bash alone, appended text", tools: ["bash"], appendSystemPrompt: "Answer in French." },
	{ name: "an MCP tool is not listed", tools: ["read", "fs__read_file"] },
	{ name: "custom prompt", tools: ["read", "bash"], customPrompt: "You are a reviewer.", contextFiles },
	{ name: "no tools", tools: [] },
].map(({ name, tools, ...extra }) => ({ name, tools, ...extra, prompt: prompt(tools, extra) }));

// Context-file discovery on a folder tree: which files, in which order.
const base = realpathSync(mkdtempSync(join(tmpdir(), "pi-context-")));
const write = (path, text) => {
	mkdirSync(join(base, path, ".."), { recursive: true });
	writeFileSync(join(base, path), text);
};
write("agent/AGENTS.md", "global");
write("repo/AGENTS.md", "repo agents");
write("repo/CLAUDE.md", "repo claude (AGENTS.md wins)");
write("repo/crates/CLAUDE.md", "crate claude");
write("repo/crates/core/src/.keep", "");
write("repo/crates/core/AGENTS.MD", "upper-case name");
const found = loadProjectContextFiles({ cwd: join(base, "repo/crates/core/src"), agentDir: join(base, "agent") })
	.filter((f) => f.path.startsWith(base))
	.map((f) => ({ path: relative(base, f.path), content: f.content }));
const discovery = { agentDir: "agent", cwd: "repo/crates/core/src", files: found };

writeFileSync(join(out, "prompts.json"), `${JSON.stringify({ cases, discovery }, null, 2)}\n`);
