#!/usr/bin/env node
// Independent reader check for zspool output: OME-Zarr 0.5 / Zarr v3 sharded
// datasets read back with zarrita (a reader that shares no code with zspool).
//
// usage: node interop/check.mjs SPEC.json
//   SPEC.json = [{"dataset": "/abs/x.ome.zarr", "raw": "/abs/x.raw", "level": 0}, ...]
//   ("raw" and "level" are optional; level defaults to 0)
//
// One line per case: "ok   <dataset> level <l> shape [..] <n> bytes" or
// "FAIL <dataset>: <reason>". Exit 0 if every case passed, 1 if any failed,
// 2 on a usage / spec-file error.
//
// zarrita 0.7.x neither verifies the crc32c of a shard index nor looks at
// index_location, and its FileSystemStore zero-fills reads past the end of a
// file, so this script also walks every shard itself (index checksum, slot
// bounds, zstd frame headers) — see README.md.

import * as fs from "node:fs/promises";
import * as path from "node:path";
import { FileSystemStore } from "@zarrita/storage";
import * as zarr from "zarrita";

const DTYPE_SIZE = {
	uint8: 1,
	int8: 1,
	uint16: 2,
	int16: 2,
	uint32: 4,
	int32: 4,
	uint64: 8,
	int64: 8,
	float32: 4,
	float64: 8,
};
const INTEGER_DTYPES = new Set([
	"uint8",
	"int8",
	"uint16",
	"int16",
	"uint32",
	"int32",
	"uint64",
	"int64",
]);
const INT_RANGE = {
	uint8: [0, 255],
	int8: [-128, 127],
	uint16: [0, 65535],
	int16: [-32768, 32767],
	uint32: [0, 4294967295],
	int32: [-2147483648, 2147483647],
	uint64: [0, 2 ** 64 - 1],
	int64: [-(2 ** 63), 2 ** 63 - 1],
};
const ABSENT = 0xffffffffffffffffn;
const MAX_PROBLEMS = 6;

class Fail extends Error {}

// ---------------------------------------------------------------- crc32c

const CRC32C_TABLE = (() => {
	const t = new Uint32Array(256);
	for (let i = 0; i < 256; i++) {
		let c = i;
		for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
		t[i] = c >>> 0;
	}
	return t;
})();

function crc32c(bytes) {
	let c = 0xffffffff;
	for (let i = 0; i < bytes.length; i++) {
		c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
	}
	return (c ^ 0xffffffff) >>> 0;
}

if (crc32c(new TextEncoder().encode("123456789")) !== 0xe3069283) {
	throw new Error("crc32c self-test failed");
}

// ---------------------------------------------------------------- helpers

const prod = (a) => a.reduce((x, y) => x * y, 1);
const fmt = (a) => `[${a.join(",")}]`;
const isInt = (x) => Number.isInteger(x) && x >= 0;

function describe(err) {
	let parts = [];
	for (let e = err; e && parts.length < 4; e = e.cause) {
		parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
	}
	return parts.join(" <- ");
}

async function readJSON(file) {
	let text;
	try {
		text = await fs.readFile(file, "utf8");
	} catch (e) {
		throw new Fail(`cannot read ${file}: ${e.code ?? e.message}`);
	}
	try {
		return JSON.parse(text);
	} catch (e) {
		throw new Fail(`${file}: invalid JSON: ${e.message}`);
	}
}

async function readAt(fh, offset, length) {
	const buf = Buffer.alloc(length);
	let got = 0;
	while (got < length) {
		const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
		if (bytesRead === 0) break;
		got += bytesRead;
	}
	if (got !== length) {
		throw new Fail(`short read at ${offset}: ${got} of ${length} bytes`);
	}
	return buf;
}

function byteswapCopy(src, size) {
	const out = Buffer.from(src); // copy
	if (size === 1) return out;
	for (let i = 0; i + size <= out.length; i += size) {
		for (let j = 0; j < size / 2; j++) {
			const t = out[i + j];
			out[i + j] = out[i + size - 1 - j];
			out[i + size - 1 - j] = t;
		}
	}
	return out;
}

function unravel(flat, shape) {
	const out = new Array(shape.length);
	for (let d = shape.length - 1; d >= 0; d--) {
		out[d] = flat % shape[d];
		flat = Math.floor(flat / shape[d]);
	}
	return out;
}

// ---------------------------------------------------------------- metadata

// Checks what zarrita silently assumes or DESIGN.md fixes; returns the parsed
// layout. Throws Fail on anything that makes reading meaningless.
function checkArrayMeta(meta, where) {
	const p = [];
	if (meta.zarr_format !== 3) p.push(`zarr_format ${meta.zarr_format}, want 3`);
	if (meta.node_type !== "array") p.push(`node_type ${meta.node_type}, want array`);
	const es = DTYPE_SIZE[meta.data_type];
	if (!es) throw new Fail(`${where}: unsupported data_type ${meta.data_type}`);
	const shape = meta.shape;
	if (!Array.isArray(shape) || !shape.every(isInt)) {
		throw new Fail(`${where}: bad shape ${JSON.stringify(shape)}`);
	}
	const rank = shape.length;
	if (meta.chunk_grid?.name !== "regular") p.push(`chunk_grid.name ${meta.chunk_grid?.name}`);
	const shard = meta.chunk_grid?.configuration?.chunk_shape;
	if (!Array.isArray(shard) || shard.length !== rank || !shard.every((x) => isInt(x) && x > 0)) {
		throw new Fail(`${where}: bad chunk_grid chunk_shape ${JSON.stringify(shard)}`);
	}
	const cke = meta.chunk_key_encoding;
	if (cke?.name !== "default" || (cke.configuration?.separator ?? "/") !== "/") {
		p.push(`chunk_key_encoding ${JSON.stringify(cke)}, want default "/"`);
	}
	if (INTEGER_DTYPES.has(meta.data_type)) {
		const fv = meta.fill_value;
		const [lo, hi] = INT_RANGE[meta.data_type];
		if (!Number.isInteger(fv)) {
			p.push(`fill_value ${JSON.stringify(fv)} is not an integer JSON number`);
		} else if (fv < lo || fv > hi) {
			p.push(`fill_value ${fv} out of range for ${meta.data_type}`);
		} else if (!Number.isSafeInteger(fv)) {
			// JSON.parse rounds it, so zarrita (and any JS reader) fills a different value.
			p.push(`fill_value ${fv} is not a safe integer (|v| > 2^53-1): JS readers (zarrita) round it`);
		}
	}
	if (!Array.isArray(meta.codecs) || meta.codecs.length !== 1 || meta.codecs[0].name !== "sharding_indexed") {
		throw new Fail(`${where}: codecs must be exactly [sharding_indexed], got ${JSON.stringify(meta.codecs?.map((c) => c.name))}`);
	}
	const sc = meta.codecs[0].configuration ?? {};
	const chunk = sc.chunk_shape;
	if (!Array.isArray(chunk) || chunk.length !== rank || !chunk.every((x) => isInt(x) && x > 0)) {
		throw new Fail(`${where}: bad sharding chunk_shape ${JSON.stringify(chunk)}`);
	}
	if (!shard.every((s, d) => s % chunk[d] === 0)) {
		throw new Fail(`${where}: shard shape ${fmt(shard)} is not a multiple of chunk shape ${fmt(chunk)}`);
	}
	// zarrita ignores index_location and always reads the index from the end.
	if (sc.index_location !== "end") p.push(`index_location ${JSON.stringify(sc.index_location)}, want "end"`);
	const inner = sc.codecs ?? [];
	if (inner.length !== 2 || inner[0].name !== "bytes" || inner[1].name !== "zstd") {
		p.push(`inner codecs ${JSON.stringify(inner.map((c) => c.name))}, want [bytes, zstd]`);
	}
	const bytesCodec = inner.find((c) => c.name === "bytes");
	let endian = bytesCodec?.configuration?.endian;
	if (endian === undefined) {
		if (es > 1) p.push("bytes codec has no endian for a multi-byte data_type");
		endian = "little";
	} else if (endian !== "little" && endian !== "big") {
		p.push(`bytes endian ${JSON.stringify(endian)}`);
	}
	const ic = sc.index_codecs ?? [];
	if (
		ic.length !== 2 ||
		ic[0].name !== "bytes" ||
		ic[0].configuration?.endian !== "little" ||
		ic[1].name !== "crc32c"
	) {
		p.push(`index_codecs ${JSON.stringify(ic)}, want [bytes little, crc32c]`);
	}
	if (p.length) throw new Fail(`${where}: ${p.join("; ")}`);
	return { shape, shard, chunk, es, endian, dtype: meta.data_type, rank };
}

// ---------------------------------------------------------------- zstd frames

// Walks the zstd frames of one stored chunk without decompressing: each frame
// must carry Frame_Content_Size, the frames must exactly fill the chunk's
// bytes, and their content sizes must add up to the padded chunk size.
function checkZstdFrames(b, want) {
	let p = 0;
	let total = 0n;
	let frames = 0;
	const need = (n) => {
		if (p + n > b.length) throw new Fail(`zstd data truncated at byte ${p} of ${b.length}`);
	};
	while (p < b.length) {
		need(4);
		const magic = b.readUInt32LE(p);
		if ((magic & 0xfffffff0) >>> 0 === 0x184d2a50) {
			need(8);
			p += 8 + b.readUInt32LE(p + 4);
			if (p > b.length) throw new Fail("skippable frame runs past chunk end");
			continue;
		}
		if (magic !== 0xfd2fb528) {
			throw new Fail(`bad zstd magic 0x${magic.toString(16)} at byte ${p}`);
		}
		need(5);
		const fhd = b[p + 4];
		const fcsFlag = fhd >> 6;
		const single = (fhd >> 5) & 1;
		const checksum = (fhd >> 2) & 1;
		const dictFlag = fhd & 3;
		if (fhd & 8) throw new Fail(`zstd frame at byte ${p}: reserved bit set`);
		let q = p + 5 + (single ? 0 : 1) + [0, 1, 2, 4][dictFlag];
		const fcsSize = fcsFlag === 0 ? (single ? 1 : 0) : [1, 2, 4, 8][fcsFlag];
		if (fcsSize === 0) throw new Fail(`zstd frame at byte ${p} has no Frame_Content_Size`);
		p = q;
		need(fcsSize);
		let fcs;
		if (fcsSize === 1) fcs = BigInt(b[q]);
		else if (fcsSize === 2) fcs = BigInt(b.readUInt16LE(q) + 256);
		else if (fcsSize === 4) fcs = BigInt(b.readUInt32LE(q));
		else fcs = b.readBigUInt64LE(q);
		p = q + fcsSize;
		for (;;) {
			need(3);
			const h = b[p] | (b[p + 1] << 8) | (b[p + 2] << 16);
			const last = h & 1;
			const type = (h >> 1) & 3;
			const size = h >>> 3;
			p += 3;
			if (type === 3) throw new Fail(`zstd reserved block type at byte ${p - 3}`);
			need(type === 1 ? 1 : size);
			p += type === 1 ? 1 : size;
			if (last) break;
		}
		if (checksum) {
			need(4);
			p += 4;
		}
		total += fcs;
		frames++;
	}
	if (frames === 0) throw new Fail("no zstd frame");
	if (total !== BigInt(want)) {
		throw new Fail(`zstd Frame_Content_Size ${total}, want ${want} (full padded chunk)`);
	}
}

// ---------------------------------------------------------------- shards

async function listFiles(dir, rel = []) {
	let ents;
	try {
		ents = await fs.readdir(dir, { withFileTypes: true });
	} catch (e) {
		if (e.code === "ENOENT") return [];
		throw e;
	}
	const out = [];
	for (const e of ents) {
		const r = [...rel, e.name];
		if (e.isDirectory()) out.push(...(await listFiles(path.join(dir, e.name), r)));
		else out.push({ rel: r, file: e.isFile() });
	}
	return out;
}

// Walks every shard object of one level: key in range, index crc32c, slot
// bounds, absent slots for chunks outside the array, zstd frame headers.
async function checkShards(levelDir, dp, L, problems) {
	const { shape, shard, chunk, es, rank } = L;
	const t = shape.map((s, d) => Math.ceil(s / chunk[d])); // chunks per dim
	const pp = shard.map((s, d) => s / chunk[d]); // chunks per shard per dim
	const q = shape.map((s, d) => Math.ceil(s / shard[d])); // shards per dim
	const nslots = prod(pp);
	const indexLen = 16 * nslots + 4;
	const chunkBytes = prod(chunk) * es;
	const found = new Set();
	for (const { rel, file } of await listFiles(path.join(levelDir, "c"))) {
		const key = `${dp}/c/${rel.join("/")}`;
		const g = rel.map((x) => (/^(0|[1-9][0-9]*)$/.test(x) ? Number(x) : Number.NaN));
		if (!file || g.length !== rank || !g.every((x, d) => x < q[d])) {
			problems.push(`unexpected object ${key} (shard grid ${fmt(q)})`);
			continue;
		}
		found.add(g.join("/"));
		const fp = path.join(levelDir, "c", ...rel);
		const fh = await fs.open(fp, "r");
		try {
			const size = (await fh.stat()).size;
			if (size < indexLen) {
				problems.push(`${key}: ${size} bytes, smaller than its index (${indexLen})`);
				continue;
			}
			const idx = await readAt(fh, size - indexLen, indexLen);
			const stored = idx.readUInt32LE(16 * nslots);
			const computed = crc32c(idx.subarray(0, 16 * nslots));
			if (stored !== computed) {
				problems.push(
					`${key}: index crc32c mismatch (stored 0x${stored.toString(16).padStart(8, "0")}, computed 0x${computed.toString(16).padStart(8, "0")})`,
				);
				continue;
			}
			const dataEnd = size - indexLen;
			const used = [];
			for (let s = 0; s < nslots; s++) {
				const off = idx.readBigUInt64LE(16 * s);
				const nb = idx.readBigUInt64LE(16 * s + 8);
				const w = unravel(s, pp);
				const c = w.map((x, d) => g[d] * pp[d] + x);
				const outside = c.some((x, d) => x >= t[d]);
				if (off === ABSENT && nb === ABSENT) continue;
				if (off === ABSENT || nb === ABSENT) {
					problems.push(`${key}: slot ${s} half-absent (offset ${off}, nbytes ${nb})`);
					continue;
				}
				if (outside) {
					problems.push(`${key}: slot ${s} (chunk ${fmt(c)}) lies outside the array but is not absent`);
					continue;
				}
				if (nb === 0n || off + nb > BigInt(dataEnd)) {
					problems.push(`${key}: slot ${s} (chunk ${fmt(c)}) offset ${off} nbytes ${nb} outside the chunk area [0,${dataEnd})`);
					continue;
				}
				used.push([Number(off), Number(nb), s]);
				try {
					checkZstdFrames(await readAt(fh, Number(off), Number(nb)), chunkBytes);
				} catch (e) {
					if (!(e instanceof Fail)) throw e;
					problems.push(`${key}: slot ${s} (chunk ${fmt(c)}): ${e.message}`);
				}
			}
			used.sort((a, b) => a[0] - b[0]);
			for (let i = 1; i < used.length; i++) {
				if (used[i][0] < used[i - 1][0] + used[i - 1][1]) {
					problems.push(`${key}: slots ${used[i - 1][2]} and ${used[i][2]} overlap`);
				}
			}
		} finally {
			await fh.close();
		}
	}
	// Zarr lets a reader treat a missing shard as all fill, but DESIGN.md has
	// zspool write every shard (edge shards with their full index), so a
	// missing one means a lost or never-written object.
	const missing = [];
	for (let i = 0; i < prod(q); i++) {
		const g = unravel(i, q).join("/");
		if (!found.has(g)) missing.push(`${dp}/c/${g}`);
	}
	if (missing.length) {
		problems.push(`${missing.length} of ${prod(q)} shard objects missing (first: ${missing[0]})`);
	}
}

// ---------------------------------------------------------------- one case

async function checkCase(c) {
	const problems = [];
	if (typeof c?.dataset !== "string") throw new Fail("case has no \"dataset\"");
	const root = path.resolve(c.dataset);
	const level = c.level ?? 0;
	if (!isInt(level)) throw new Fail(`bad level ${JSON.stringify(c.level)}`);

	const store = new FileSystemStore(root);
	let group;
	try {
		group = await zarr.open.v3(store, { kind: "group" });
	} catch (e) {
		throw new Fail(`zarrita cannot open the root group: ${describe(e)}`);
	}
	const ome = group.attrs?.ome;
	let axes, datasets, viewer = "plain Zarr v3 group";
	if (ome === undefined) {
		// A plain Zarr v3 group (dimensions OME cannot hold): levels 0, 1, …
		({ axes, datasets } = await plainLevels(root));
	} else {
		if (!ome || typeof ome !== "object") throw new Fail("group attributes.ome is not an object");
		if (ome.version !== "0.5") problems.push(`ome.version ${JSON.stringify(ome.version)}, want "0.5"`);
		const ms = ome.multiscales;
		if (!Array.isArray(ms) || ms.length < 1) throw new Fail("ome.multiscales missing or empty");
		const m = ms[0];
		axes = m.axes;
		if (!Array.isArray(axes) || axes.length < 1) throw new Fail("multiscales[0].axes missing or empty");
		datasets = m.datasets;
		viewer = viewerCheck(ome, problems);
	}
	const axisNames = axes.map((a) => a?.name);
	if (!axisNames.every((n) => typeof n === "string" && n)) throw new Fail(`axis without a name: ${JSON.stringify(axes)}`);
	if (new Set(axisNames).size !== axisNames.length) problems.push(`duplicate axis names ${JSON.stringify(axisNames)}`);
	if (!Array.isArray(datasets) || datasets.length < 1) throw new Fail("multiscales[0].datasets missing or empty");
	if (level >= datasets.length) throw new Fail(`level ${level} requested, only ${datasets.length} datasets`);

	const levels = [];
	let prevShape = null;
	for (let i = 0; i < datasets.length; i++) {
		const ds = datasets[i];
		const dp = ds?.path;
		const where = `dataset ${i} (path ${JSON.stringify(dp)})`;
		if (typeof dp !== "string" || !dp || dp.startsWith("/") || dp.split("/").includes("..")) {
			throw new Fail(`${where}: bad path`);
		}
		const cts = ds.coordinateTransformations;
		if (ome === undefined) {
			// a plain group carries no transforms
		} else if (!Array.isArray(cts)) {
			problems.push(`${where}: no coordinateTransformations`);
		} else {
			const scales = cts.filter((t) => t?.type === "scale");
			if (scales.length !== 1) problems.push(`${where}: ${scales.length} scale transforms, want exactly 1`);
			else if (cts[0]?.type !== "scale") problems.push(`${where}: first transform is ${cts[0]?.type}, want scale`);
			for (const t of cts) {
				if (t?.type !== "scale" && t?.type !== "translation") {
					problems.push(`${where}: transform type ${JSON.stringify(t?.type)}`);
					continue;
				}
				const v = t[t.type];
				if (!Array.isArray(v) || v.length !== axes.length || !v.every((x) => typeof x === "number")) {
					problems.push(`${where}: ${t.type} ${JSON.stringify(v)} is not ${axes.length} numbers`);
				} else if (t.type === "scale" && !v.every((x) => x > 0)) {
					problems.push(`${where}: scale ${JSON.stringify(v)} has a non-positive entry`);
				}
			}
		}
		let arr;
		try {
			arr = await zarr.open.v3(group.resolve(dp), { kind: "array" });
		} catch (e) {
			throw new Fail(`${where}: zarrita cannot open it as an array: ${describe(e)}`);
		}
		const meta = await readJSON(path.join(root, dp, "zarr.json"));
		const L = checkArrayMeta(meta, where);
		if (arr.shape.length !== axes.length) {
			problems.push(`${where}: rank ${arr.shape.length} != ${axes.length} axes`);
		}
		if (JSON.stringify(arr.dimensionNames) !== JSON.stringify(axisNames)) {
			problems.push(`${where}: dimension_names ${JSON.stringify(arr.dimensionNames)} != axes ${JSON.stringify(axisNames)}`);
		}
		if (JSON.stringify(arr.shape) !== JSON.stringify(L.shape) || arr.dtype !== L.dtype) {
			problems.push(`${where}: zarrita sees shape ${fmt(arr.shape)} ${arr.dtype}, zarr.json says ${fmt(L.shape)} ${L.dtype}`);
		}
		if (prevShape) {
			if (prevShape.length !== L.shape.length) {
				problems.push(`${where}: rank differs from the previous dataset`);
			} else if (!L.shape.every((s, d) => s <= prevShape[d])) {
				problems.push(`${where}: shape ${fmt(L.shape)} larger than previous ${fmt(prevShape)} on some dim`);
			} else if (L.shape.every((s, d) => s === prevShape[d])) {
				problems.push(`${where}: shape ${fmt(L.shape)} equals the previous dataset's`);
			}
		}
		prevShape = L.shape;
		await checkShards(path.join(root, dp), dp, L, problems);
		levels.push({ arr, L });
	}

	// Read the requested level in full through zarrita.
	const { arr, L } = levels[level];
	let out;
	try {
		out = await zarr.get(arr);
	} catch (e) {
		problems.push(`level ${level}: zarrita read failed: ${describe(e)}`);
	}
	let nbytes = 0;
	if (out) {
		const got = Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength);
		nbytes = got.length;
		const want = prod(L.shape) * L.es;
		if (JSON.stringify(out.shape) !== JSON.stringify(L.shape) || got.length !== want) {
			problems.push(`level ${level}: zarrita returned shape ${fmt(out.shape)}, ${got.length} bytes; want ${fmt(L.shape)}, ${want} bytes`);
		} else if (c.raw !== undefined) {
			let raw;
			try {
				raw = await fs.readFile(path.resolve(c.raw));
			} catch (e) {
				throw new Fail(`cannot read raw ${c.raw}: ${e.code ?? e.message}`);
			}
			if (raw.length !== want) {
				problems.push(`raw ${c.raw} is ${raw.length} bytes, want ${want} (${fmt(L.shape)} ${L.dtype})`);
			} else {
				// zarrita hands back native (little-endian) values; the raw file is in
				// the bytes codec's byte order.
				const rawLE = L.endian === "big" ? byteswapCopy(raw, L.es) : raw;
				if (!rawLE.equals(got)) {
					let i = 0;
					while (rawLE[i] === got[i]) i++;
					const el = Math.floor(i / L.es);
					const j = i % L.es;
					const rawOff = L.endian === "big" ? el * L.es + (L.es - 1 - j) : i;
					problems.push(
						`level ${level} differs from raw at byte offset ${rawOff} (element ${el} at ${fmt(unravel(el, L.shape))}; raw byte 0x${raw[rawOff].toString(16).padStart(2, "0")}, zarrita 0x${got[i].toString(16).padStart(2, "0")})`,
					);
				}
			}
		}
	}
	if (problems.length) {
		const extra = problems.length > MAX_PROBLEMS ? `; (${problems.length - MAX_PROBLEMS} more)` : "";
		throw new Fail(problems.slice(0, MAX_PROBLEMS).join("; ") + extra);
	}
	return `level ${level} shape ${fmt(L.shape)} ${nbytes} bytes; ${viewer}`;
}

// plainLevels lists a plain group's arrays 0, 1, … and takes the axes from
// level 0's dimension_names.
async function plainLevels(root) {
	const datasets = [];
	for (let i = 0; i < 64; i++) {
		try {
			await fs.stat(path.join(root, String(i), "zarr.json"));
		} catch {
			break;
		}
		datasets.push({ path: String(i) });
	}
	if (!datasets.length) throw new Fail("a group with neither attributes.ome nor an array 0");
	const meta = await readJSON(path.join(root, "0", "zarr.json"));
	const names = meta.dimension_names ?? meta.shape.map((_, d) => `dim_${d}`);
	return { axes: names.map((name) => ({ name })), datasets };
}

// ---------------------------------------------------------------- viewer check

// A second, independent reading of the OME layer, the way a viewer takes
// it (re-implemented from neuroglancer's OME-Zarr rules, not from zspool):
// every space and time unit must be one it can scale to metres or seconds
// ("Unsupported unit" otherwise), every dataset's transforms must compose
// into a positive scale and an offset per axis, levels must get coarser,
// and omero channels must match the channel axis with usable colours and
// windows. It returns a one-line summary of what a viewer would show.
const SI_PREFIXES = {
	yotta: 1e24, zetta: 1e21, exa: 1e18, peta: 1e15, tera: 1e12, giga: 1e9, mega: 1e6, kilo: 1e3, hecto: 1e2,
	deca: 1e1, "": 1, deci: 1e-1, centi: 1e-2, milli: 1e-3, micro: 1e-6, nano: 1e-9, pico: 1e-12, femto: 1e-15,
	atto: 1e-18, zepto: 1e-21, yocto: 1e-24,
};
const OTHER_UNITS = {
	space: { angstrom: 1e-10, foot: 0.3048, inch: 0.0254, mile: 1609.344, parsec: 3.0856775814913673e16, yard: 0.9144 },
	time: { minute: 60, hour: 3600, day: 86400 },
};

function unitFactor(type, unit) {
	const base = type === "space" ? "meter" : "second";
	if (unit in OTHER_UNITS[type]) return OTHER_UNITS[type][unit];
	if (unit.endsWith(base)) {
		const prefix = unit.slice(0, unit.length - base.length);
		if (prefix in SI_PREFIXES) return SI_PREFIXES[prefix];
	}
	throw new Fail(`Unsupported unit: ${unit}`);
}

function viewerCheck(ome, problems) {
	const m = ome.multiscales[0];
	const axes = m.axes;
	const shown = [];
	for (const a of axes) {
		if (a.unit !== undefined && (a.type === "space" || a.type === "time")) {
			unitFactor(a.type, a.unit); // throws a viewer's "Unsupported unit"
		}
		if (a.type === "channel" && a.unit !== undefined) problems.push(`axis ${a.name}: a channel axis with unit ${a.unit}`);
		shown.push(a.unit ? `${a.name} ${a.unit}` : a.name);
	}
	const spaces = axes.filter((a) => a.type === "space").length;
	if (spaces < 2 || spaces > 3) problems.push(`${spaces} space axes: a viewer wants 2 or 3`);
	let prev = null;
	(m.datasets ?? []).forEach((ds, i) => {
		const scale = axes.map(() => 1);
		const offset = axes.map(() => 0);
		for (const t of ds.coordinateTransformations ?? []) {
			const v = t[t.type];
			if (!Array.isArray(v) || v.length !== axes.length) return;
			for (let d = 0; d < axes.length; d++) {
				if (t.type === "scale") {
					scale[d] *= v[d];
					offset[d] *= v[d];
				} else if (t.type === "translation") offset[d] += v[d];
			}
		}
		if (!scale.every((x) => x > 0 && Number.isFinite(x))) problems.push(`dataset ${i}: composed scale ${fmt(scale)} not positive`);
		if (prev && !scale.every((x, d) => x >= prev[d])) problems.push(`dataset ${i}: scale ${fmt(scale)} finer than the level before (${fmt(prev)})`);
		prev = scale;
	});
	let channels = "";
	if (ome.omero !== undefined) {
		const chans = ome.omero?.channels;
		const c = axes.findIndex((a) => a.type === "channel");
		if (!Array.isArray(chans)) problems.push("omero without channels");
		else {
			if (c < 0) problems.push("omero channels without a channel axis");
			for (const [i, ch] of chans.entries()) {
				if (!/^[0-9A-Fa-f]{6}$/.test(ch.color ?? "")) problems.push(`omero channel ${i}: colour ${JSON.stringify(ch.color)}`);
				const w = ch.window ?? {};
				if (![w.start, w.end, w.min, w.max].every((x) => typeof x === "number") || !(w.min <= w.start && w.start < w.end && w.end <= w.max)) {
					problems.push(`omero channel ${i}: window ${JSON.stringify(w)}`);
				}
			}
			channels = `; channels ${chans.map((ch) => `${ch.label} #${ch.color}`).join(", ")}`;
		}
	}
	return `viewer: axes ${shown.join(", ")}, ${m.datasets?.length ?? 0} levels${channels}`;
}

// ---------------------------------------------------------------- main

async function main(argv) {
	if (argv.length !== 1 || argv[0] === "-h" || argv[0] === "--help") {
		console.error("usage: node interop/check.mjs SPEC.json");
		return 2;
	}
	let spec;
	try {
		spec = JSON.parse(await fs.readFile(argv[0], "utf8"));
	} catch (e) {
		console.error(`check.mjs: cannot read spec ${argv[0]}: ${e.message}`);
		return 2;
	}
	if (!Array.isArray(spec)) {
		console.error("check.mjs: spec must be a JSON array of cases");
		return 2;
	}
	let failed = 0;
	for (const c of spec) {
		const name = c?.dataset ?? JSON.stringify(c);
		try {
			console.log(`ok   ${name} ${await checkCase(c)}`);
		} catch (e) {
			failed++;
			const reason = e instanceof Fail ? e.message : `unexpected error: ${describe(e)}`;
			console.log(`FAIL ${name}: ${reason}`);
		}
	}
	return failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
