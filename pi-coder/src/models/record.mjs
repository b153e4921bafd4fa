// Writes pi 0.73.1's built-in model catalog (npm @mariozechner/pi-ai's `MODELS`) for the
// providers this crate speaks natively (with Bedrock and Vertex AI), for ../models.rs. Usage:
//   node record.mjs <dir with node_modules> > catalog-pi-0.73.1.json
import { join } from "path";
import { pathToFileURL } from "url";

const [root] = process.argv.slice(2);
const ai = await import(pathToFileURL(join(root, "node_modules/@mariozechner/pi-ai/dist/models.js")).href);
const out = [];
for (const provider of ["openai", "anthropic", "google", "mistral", "azure-openai-responses", "amazon-bedrock", "google-vertex"]) {
	for (const m of ai.getModels(provider)) {
		const entry = {
			provider: m.provider, id: m.id, name: m.name, api: m.api, baseUrl: m.baseUrl,
			reasoning: m.reasoning, input: m.input, cost: m.cost,
			contextWindow: m.contextWindow, maxTokens: m.maxTokens,
		};
		if (m.thinkingLevelMap) entry.thinkingLevelMap = m.thinkingLevelMap;
		out.push(entry);
	}
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
