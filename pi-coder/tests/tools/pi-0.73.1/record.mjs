// Records what pi 0.73.1's own built-in tools answer for each case in cases.json, into
// outputs.json, so tests/tools/pi_outputs.rs can compare our tools with pi's on the same input.
//
// Usage (see README.md):
//   node record.mjs <dir containing node_modules/@mariozechner/pi-coding-agent@0.73.1>
// pi's find and grep run fd and rg from PATH (Debian's `fdfind` is found too).
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { crc32, deflateSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const root = process.argv[2];
if (!root) {
	console.error("usage: node record.mjs <dir with node_modules/@mariozechner/pi-coding-agent>");
	process.exit(2);
}
const pkg = join(root, "node_modules/@mariozechner/pi-coding-agent");
const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
if (version !== "0.73.1") throw new Error(`expected pi-coding-agent 0.73.1, found ${version}`);
const pi = await import(pathToFileURL(join(pkg, "dist/index.js")).href);

const makers = {
	bash: (cwd, c) => pi.createBashTool(cwd, c.shell ? { shellPath: c.shell } : undefined),
	read: (cwd) => pi.createReadTool(cwd),
	edit: (cwd) => pi.createEditTool(cwd),
	find: (cwd) => pi.createFindTool(cwd),
	grep: (cwd) => pi.createGrepTool(cwd),
	ls: (cwd) => pi.createLsTool(cwd),
};

/** A 1x1 RGB PNG with a private `prVt` chunk that pads the file to exactly `size` bytes. */
export function paddedPng(size) {
	const chunk = (type, data) => {
		const head = Buffer.alloc(8);
		head.writeUInt32BE(data.length, 0);
		head.write(type, 4, "latin1");
		const crc = Buffer.alloc(4);
		crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
		return Buffer.concat([head, data, crc]);
	};
	const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
	// zlib stream of one scanline: filter byte 0 and one red pixel.
	const idat = Buffer.from("789c63f8cfc0000003010100", "hex");
	const sig = Buffer.from("89504e470d0a1a0a", "hex");
	const fixed = sig.length + 3 * 12 + ihdr.length + idat.length + 12;
	const pad = Buffer.alloc(size - fixed, 0x61);
	return Buffer.concat([sig, chunk("IHDR", ihdr), chunk("IDAT", idat), chunk("prVt", pad), chunk("IEND", Buffer.alloc(0))]);
}

/** A `width` x `height` RGB PNG of one grey: the same pixels as `solid_png` in pi_outputs.rs. */
export function solidPng(width, height) {
	const chunk = (type, data) => {
		const head = Buffer.alloc(8);
		head.writeUInt32BE(data.length, 0);
		head.write(type, 4, "latin1");
		const crc = Buffer.alloc(4);
		crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
		return Buffer.concat([head, data, crc]);
	};
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(width, 0);
	ihdr.writeUInt32BE(height, 4);
	ihdr.set([8, 2, 0, 0, 0], 8);
	const row = Buffer.alloc(1 + 3 * width, 0x80);
	row[0] = 0;
	const raw = Buffer.concat(Array.from({ length: height }, () => row));
	const sig = Buffer.from("89504e470d0a1a0a", "hex");
	return Buffer.concat([sig, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

/** The APP1 segment of an EXIF header (big-endian TIFF) holding one orientation entry. */
function exifApp1(orientation) {
	const tiff = Buffer.from([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0]);
	const length = Buffer.alloc(2);
	length.writeUInt16BE(2 + 6 + tiff.length, 0);
	return Buffer.concat([Buffer.from([0xff, 0xe1]), length, Buffer.from("Exif\0\0", "latin1"), tiff]);
}

/** A `width` x `height` grey JPEG (photon, pi's image library) with an EXIF orientation segment
 * right after SOI: `oriented_jpeg` in pi_outputs.rs builds the same layout with the image crate. */
async function orientedJpeg(width, height, orientation) {
	const module = await import(pathToFileURL(join(root, "node_modules/@silvia-odwyer/photon-node/photon_rs.js")).href);
	const photon = module.default ?? module;
	const image = new photon.PhotonImage(new Uint8Array(width * height * 4).fill(0x80), width, height);
	const jpeg = Buffer.from(image.get_bytes_jpeg(90));
	image.free();
	return Buffer.concat([jpeg.subarray(0, 2), exifApp1(orientation), jpeg.subarray(2)]);
}

const cases = JSON.parse(readFileSync(join(here, "cases.json"), "utf8"));
const outputs = {};
for (const c of cases) {
	const dir = mkdtempSync(join(tmpdir(), "pi-case-"));
	try {
		for (const d of c.dirs ?? []) mkdirSync(join(dir, d), { recursive: true });
		for (const [name, text] of Object.entries(c.files ?? {})) {
			mkdirSync(dirname(join(dir, name)), { recursive: true });
			writeFileSync(join(dir, name), text);
		}
		const files = {};
		for (const [name, spec] of Object.entries(c.generated ?? {})) {
			if (spec.paddedPng) files[name] = paddedPng(spec.paddedPng);
			else if (spec.solidPng) files[name] = solidPng(spec.solidPng[0], spec.solidPng[1]);
			else files[name] = await orientedJpeg(...spec.orientedJpeg);
			writeFileSync(join(dir, name), files[name]);
		}
		const tool = makers[c.tool](dir, c);
		let out;
		try {
			const result = await tool.execute("call-1", c.args, undefined, undefined);
			out = { isError: false, content: result.content };
		} catch (err) {
			out = { isError: true, content: [{ type: "text", text: err.message }] };
		}
		const content = out.content.map((part) => {
			// A lone surrogate (grep cutting an emoji in half) cannot be stored as UTF-8 text:
			// record it as U+FFFD, what encoding the string as UTF-8 would give.
			if (part.type === "text") {
				// bash's full-output log has a random name (and pi writes it to the system's temp dir).
				const text = part.text
					.split(dir)
					.join("<dir>")
					.replace(/Full output: [^\]]*\]/g, "Full output: <log>]")
					.toWellFormed();
				// fd walks in parallel, so its order changes between runs: keep the set.
				return { type: "text", text: c.unordered ? text.split("\n").sort().join("\n") : text };
			}
			const original = Object.values(files).find((b) => b.toString("base64") === part.data);
			return { type: "image", mimeType: part.mimeType, unchanged: original !== undefined };
		});
		if (c.edited) {
			content.push({ type: "file", text: readFileSync(join(dir, c.edited), "utf8") });
		}
		outputs[c.name] = { isError: out.isError, content };
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}
writeFileSync(join(here, "outputs.json"), `${JSON.stringify(outputs, null, "\t")}\n`);
console.log(`recorded ${Object.keys(outputs).length} cases`);

// pi's formatSize (truncate.ts:50) on sizes around its rounding ties: every multiple of 256 bytes
// up to 512 KB (x.25 and x.75 KB are exact halves), every 2^18 bytes up to 64 MB (the same
// in MB), and the bytes next to each.
const { formatSize } = await import(pathToFileURL(join(pkg, "dist/core/tools/truncate.js")).href);
const sizes = new Set();
for (let k = 0; k <= 2048; k++) for (const d of [-1, 0, 1]) sizes.add(k * 256 + d);
for (let k = 0; k <= 256; k++) for (const d of [-1, 0, 1]) sizes.add(k * 262144 + d);
const sizeTexts = [...sizes].filter((n) => n >= 0).sort((a, b) => a - b).map((n) => [n, formatSize(n)]);
writeFileSync(join(here, "format-size.json"), `${JSON.stringify(sizeTexts)}\n`);
console.log(`recorded formatSize for ${sizeTexts.length} sizes`);
