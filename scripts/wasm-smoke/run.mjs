// Runs the verify-only wasm module: node run.mjs MODULE.wasm DIR (DIR from the `gen` binary).
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [wasmPath, dir] = process.argv.slice(2);
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const { memory, alloc, verify } = instance.exports;

function put(bytes) {
  const ptr = alloc(bytes.length);
  new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
  return [ptr, bytes.length];
}

const pk = readFileSync(join(dir, "pk.bin"));
const msg = readFileSync(join(dir, "msg.bin"));
const sig = readFileSync(join(dir, "sig.bin"));
const bad = Buffer.from(sig);
bad[bad.length - 100] ^= 1;
const other = Buffer.from(msg);
other[0] ^= 1;

const cases = [
  ["valid signature", msg, sig, 1],
  ["flipped signature byte", msg, bad, 0],
  ["other message", other, sig, 0],
  ["truncated signature", msg, sig.subarray(0, sig.length - 1), 2],
];
let failed = 0;
for (const [name, m, s, want] of cases) {
  const t = performance.now();
  const got = verify(...put(pk), ...put(m), ...put(s));
  const ms = (performance.now() - t).toFixed(1);
  console.log(`${got === want ? "ok  " : "FAIL"} ${name}: ${got} (want ${want}, ${ms} ms)`);
  if (got !== want) failed++;
}
process.exit(failed ? 1 : 0);
