// Browser (and bundler) entry of @dgsp/verifier: call `await init()` once before anything
// else; it fetches ./pkg/dgsp_verifier_wasm_bg.wasm next to this file (or the module or
// URL you pass). No other network access.
import wasmInit from './pkg/dgsp_verifier_wasm.js';
import { markReady } from './verifier.js';

export {
  TrustRoot, DgspError, CHECKS, DEFAULT_CLOCK_TOLERANCE_MS, GATEWAY_WORD, firstFailure, version,
} from './verifier.js';

let loading;
/** Instantiates the WebAssembly module (once). `source`: a URL, Response, bytes or WebAssembly.Module. */
export function init(source) {
  loading ??= wasmInit(source === undefined ? undefined : { module_or_path: source }).then(() => {
    markReady();
  });
  return loading;
}
