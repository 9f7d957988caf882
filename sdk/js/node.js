// Node entry of @dgsp/verifier: the WebAssembly module is read from disk and instantiated
// on import; `init()` exists for code shared with browsers and does nothing.
import { readFileSync } from 'node:fs';
import { initSync } from './pkg/dgsp_verifier_wasm.js';
import { markReady } from './verifier.js';

initSync({ module: readFileSync(new URL('./pkg/dgsp_verifier_wasm_bg.wasm', import.meta.url)) });
markReady();

export {
  TrustRoot, DgspError, CHECKS, DEFAULT_CLOCK_TOLERANCE_MS, GATEWAY_WORD, firstFailure, version,
} from './verifier.js';

/** Nothing to do in Node (the module is ready on import). */
export async function init() {}
