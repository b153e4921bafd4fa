// Writes session files with pi 0.73.1's own SessionManager (npm @mariozechner/pi-coding-agent),
// for ../../session.rs to read. Usage: node record.mjs <dir with node_modules> <output dir>
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { pathToFileURL } from "url";

const [root, out] = process.argv.slice(2);
const pkg = join(root, "node_modules/@mariozechner/pi-coding-agent/dist/core/session-manager.js");
const { SessionManager } = await import(pathToFileURL(pkg).href);
const { convertToLlm } = await import(pathToFileURL(join(pkg, "../messages.js")).href);

const usage = (input, output) => ({
	input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
	cost: { input: 0.0001, output: 0.0002, cacheRead: 0, cacheWrite: 0, total: 0.0003 },
});
const assistant = (content, stopReason, extra = {}) => ({
	role: "assistant", content, api: "anthropic-messages", provider: "anthropic",
	model: "claude-sonnet-4-5", usage: usage(1200, 80), stopReason, timestamp: Date.now(), ...extra,
});
const user = (content) => ({ role: "user", content, timestamp: Date.now() });
const toolResult = (toolCallId, toolName, text, isError = false, details = undefined) => ({
	role: "toolResult", toolCallId, toolName, content: [{ type: "text", text }], details, isError,
	timestamp: Date.now(),
});

function record(name, write) {
	const dir = mkdtempSync(join(tmpdir(), "pi-session-"));
	const session = SessionManager.create("/home/user/project", dir);
	write(session);
	const [file] = readdirSync(dir);
	writeFileSync(join(out, name), readFileSync(join(dir, file), "utf8"));
	// What pi sends the model when it resumes this file: its context, converted for the LLM.
	const resumed = SessionManager.open(join(dir, file), dir);
	const messages = convertToLlm(resumed.buildSessionContext().messages);
	writeFileSync(join(out, name.replace(".jsonl", ".context.json")), `${JSON.stringify(messages, null, 2)}\n`);
}

// A session with a tool call, a `!` command, an extension message, and a branch: the user went
// back to the first answer and asked something else, so the abandoned turn is not in the context.
record("branched.jsonl", (s) => {
	s.appendModelChange("anthropic", "claude-sonnet-4-5");
	s.appendThinkingLevelChange("medium");
	s.appendMessage(user("Fix the failing test in src/lib.rs"));
	s.appendMessage(assistant([
		{ type: "thinking", thinking: "Read the file first.", thinkingSignature: "sig-1" },
		{ type: "text", text: "Let me look." },
		{ type: "toolCall", id: "toolu_01", name: "read", arguments: { path: "src/lib.rs" } },
	], "toolUse"));
	s.appendMessage(toolResult("toolu_01", "read", "fn add(a: i32, b: i32) -> i32 { a - b }\n"));
	const answered = s.appendMessage(assistant([{ type: "text", text: "`add` subtracts: it should be `a + b`." }], "stop"));
	s.appendMessage(user("Abandoned question"));
	s.appendMessage(assistant([{ type: "text", text: "Abandoned answer" }], "stop"));
	s.branch(answered);
	s.appendMessage({
		role: "bashExecution", command: "cargo test", output: "test result: FAILED. 0 passed; 1 failed",
		exitCode: 101, cancelled: false, truncated: false, timestamp: Date.now(),
	});
	s.appendCustomMessageEntry("note", "Remember: run cargo fmt.", true, undefined);
	s.appendMessage(user([{ type: "text", text: "Now fix it" }]));
	s.appendMessage(assistant([
		{ type: "toolCall", id: "toolu_02", name: "edit", arguments: { path: "src/lib.rs", edits: [{ oldText: "a - b", newText: "a + b" }] } },
	], "toolUse"));
	s.appendMessage(toolResult("toolu_02", "edit", "Successfully replaced 1 block(s) in src/lib.rs.", false, { diff: "-1 a - b\n+1 a + b", firstChangedLine: 1 }));
	s.appendMessage(assistant([{ type: "text", text: "Fixed." }], "stop"));
	s.appendSessionInfo("fix add");
});

// A compacted session: the summary replaces the turns before the first kept entry.
record("compacted.jsonl", (s) => {
	s.appendMessage(user("Old question"));
	s.appendMessage(assistant([{ type: "text", text: "Old answer" }], "stop"));
	const kept = s.appendMessage(user("Kept question"));
	s.appendMessage(assistant([{ type: "text", text: "Kept answer" }], "stop"));
	s.appendCompaction("The user asked an old question.", kept, 51234, undefined, false);
	s.appendMessage(user("After compaction"));
	s.appendMessage(assistant([{ type: "text", text: "Still here" }], "stop", { errorMessage: undefined }));
});
