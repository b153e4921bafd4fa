// Our Mistral request bodies checked by Mistral's own SDK (@mistralai/mistralai 2.7.0): each body,
// its keys in the SDK's camelCase, must pass the SDK's `ChatCompletionStreamRequest` schema, and
// what the SDK would then send must carry every field we send, with the same value. A field the
// SDK does not declare, or a value of the wrong type, fails; a JSON Schema we send (a tool's
// parameters, a response format's schema) must arrive unchanged. Usage:
//   node mistral_wire.mjs <test deps folder> <file with a JSON array of bodies>
import { pathToFileURL } from "url";
import { join } from "path";
import { readFileSync } from "fs";
const [deps, bodiesFile] = process.argv.slice(2);
const components = (file) => import(pathToFileURL(join(deps, "node_modules/@mistralai/mistralai/esm/models/components", file)).href);
const mod = await components("chatcompletionstreamrequest.js");
// A response format's `json_schema` is read from the wire by the SDK's own inbound schema (its
// `schema` becomes `schemaDefinition`), so the JSON Schema inside keeps its property names.
const { JsonSchema$inboundSchema } = await components("jsonschema.js");
const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const toSdk = (v, key) => {
  if (Array.isArray(v)) return v.map((x) => toSdk(x));
  if (v && typeof v === "object") {
    if (key === "parameters") return v; // a JSON Schema, sent as it is
    if (key === "json_schema") return JsonSchema$inboundSchema.parse(v);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [camel(k), toSdk(x, k)]));
  }
  return v;
};
// Every field we send survives the SDK's schema with its value (the SDK adds its defaults,
// `prefix: false` and a call's `index`, which we leave to the server).
const missing = (ours, sdk, path) => {
  if (Array.isArray(ours)) {
    if (!Array.isArray(sdk) || sdk.length !== ours.length) return [path];
    return ours.flatMap((x, i) => missing(x, sdk[i], `${path}[${i}]`));
  }
  if (ours && typeof ours === "object") {
    if (!sdk || typeof sdk !== "object") return [path];
    return Object.keys(ours).flatMap((k) => (k in sdk ? missing(ours[k], sdk[k], `${path}.${k}`) : [`${path}.${k}`]));
  }
  return ours === sdk ? [] : [path];
};
const sort = (v) => Array.isArray(v) ? v.map(sort) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v;
let failed = 0;
for (const [i, body] of JSON.parse(readFileSync(bodiesFile, "utf8")).entries()) {
  let wire;
  try { wire = mod.ChatCompletionStreamRequest$outboundSchema.parse(toSdk(body)); }
  catch (e) { console.log(`body ${i}: the SDK refuses it: ${e.message}`); failed++; continue; }
  const lost = missing(body, JSON.parse(JSON.stringify(wire)), "body");
  if (lost.length) {
    console.log(`body ${i}: the SDK does not send ${lost.join(", ")} as we do; it would send ${JSON.stringify(sort(wire))}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
