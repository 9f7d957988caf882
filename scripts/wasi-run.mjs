// Runs a wasm32-wasip1 program (a cargo test binary) under Node's WASI, with its arguments,
// and exits with its exit code: cargo's runner for that target in scripts/wasi-test.sh.
//   node scripts/wasi-run.mjs PROGRAM.wasm [ARGS...]
import { readFile } from 'node:fs/promises';
import process from 'node:process';
import { WASI } from 'node:wasi';

const [program, ...args] = process.argv.slice(2);
if (!program) {
  console.error('usage: node scripts/wasi-run.mjs PROGRAM.wasm [ARGS...]');
  process.exit(2);
}
const wasi = new WASI({ version: 'preview1', args: [program, ...args], env: {}, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(program));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exit(wasi.start(instance));
