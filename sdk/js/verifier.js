// The @dgsp/verifier API over the WebAssembly module (wasm-bindgen, `--target web` output in
// ./pkg). Shared by the browser entry (index.js) and the Node entry (node.js), which differ
// only in how they load the module. Reports are plain objects with the Rust crate's field
// names (snake_case, the stable check names of sdk/vectors/README.md).
import * as wasm from './pkg/dgsp_verifier_wasm.js';

let ready = false;
/** @internal called by the entry points once the module is instantiated */
export function markReady() {
  ready = true;
}

/**
 * Names of the checks of an answer, in the order they are made (`witnessed_checkpoint` and
 * `witness_quorum` only with a witness policy, `min_snapshot` only with a minimum).
 */
export const CHECKS = Object.freeze([
  'gateway_status',
  'signature',
  'checkpoint_signature',
  'checkpoint_age',
  'future_checkpoint',
  'witnessed_checkpoint',
  'witness_quorum',
  'snapshot_signature',
  'snapshot_named',
  'revocation_proof',
  'min_snapshot',
]);

/**
 * How far (ms) a checkpoint's signed time may be ahead of `now_unix_ms` unless the policy says
 * otherwise (`clock_tolerance_ms`); further ahead fails `future_checkpoint`.
 */
export const DEFAULT_CLOCK_TOLERANCE_MS = 5000;

/** Every check but this one is computed locally; this one is the gateway's own word. */
export const GATEWAY_WORD = 'gateway_status';

/**
 * A check that could not be made at all: `kind` is `trust_root`, `malformed`, `signature`,
 * `bad_signed_object` (the Rust crate's `Error` variants) or `argument` / `not_initialized`.
 */
export class DgspError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'DgspError';
    this.kind = kind;
  }
}

function rethrow(e) {
  if (typeof e === 'string') {
    let o;
    try {
      o = JSON.parse(e);
    } catch {
      throw new DgspError('internal', e);
    }
    throw new DgspError(o.kind, o.message);
  }
  throw e;
}

function call(f) {
  if (!ready) {
    throw new DgspError('not_initialized', 'call `await init()` first (browser entry)');
  }
  try {
    return f();
  } catch (e) {
    rethrow(e);
  }
}

const enc = new TextEncoder();

/** Uint8Array | ArrayBuffer | typed array view | string (UTF-8) -> Uint8Array */
function bytes(x, name) {
  if (x instanceof Uint8Array) return x;
  if (typeof x === 'string') return enc.encode(x);
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new DgspError('argument', `${name}: expected bytes or a string`);
}

/** A JSON document: its text, its bytes, or the parsed object. */
function jsonBytes(x, name) {
  if (x !== null && typeof x === 'object' && !(x instanceof ArrayBuffer) && !ArrayBuffer.isView(x)) {
    return enc.encode(JSON.stringify(x));
  }
  return bytes(x, name);
}

const dec = new TextDecoder('utf-8', { fatal: true });

/** A string, or UTF-8 bytes of one. */
function text(x, name) {
  if (typeof x === 'string') return x;
  try {
    return dec.decode(bytes(x, name));
  } catch (e) {
    if (e instanceof DgspError) throw e;
    throw new DgspError('malformed', `${name}: not UTF-8 text`);
  }
}

function num(v, name) {
  if (typeof v === 'bigint') v = Number(v);
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new DgspError('argument', `${name} must be a non-negative integer`);
  }
  return v;
}

/** A root from `make()`, with the witness policy of `options` when it has one. */
function build(make, options) {
  const inner = call(make);
  const policy = options?.witnessPolicy;
  const statement = options?.logKeyStatement;
  if (policy == null) {
    if (statement != null) {
      inner.free();
      throw new DgspError('argument', 'logKeyStatement is only used with a witnessPolicy');
    }
    return new TrustRoot(inner);
  }
  try {
    return new TrustRoot(inner).withWitnessPolicy(policy, statement);
  } finally {
    inner.free();
  }
}

/**
 * The group a caller trusts: its manager public key, from bytes or a key file, optionally
 * pinned to a fingerprint obtained out of band, and optionally a witness policy
 * (`options.witnessPolicy`, see `withWitnessPolicy`). Every check is made under them.
 */
export class TrustRoot {
  #inner;

  /** @private use the static constructors */
  constructor(inner) {
    this.#inner = inner;
  }

  /** From the key's raw encoding. `options`: `{ witnessPolicy?, logKeyStatement? }`. */
  static fromKeyBytes(key, options) {
    return build(() => wasm.TrustRoot.fromKeyBytes(bytes(key, 'key')), options);
  }

  /**
   * From a key file's contents (base64 on its first line, as `GET /v1/group` serves
   * `public_key`). `options`: `{ witnessPolicy?, logKeyStatement? }`.
   */
  static fromKeyFile(contents, options) {
    return build(() => wasm.TrustRoot.fromKeyFile(bytes(contents, 'contents')), options);
  }

  /**
   * As fromKeyFile, and the key's fingerprint must be `fingerprint` (64 hex characters).
   * `options`: `{ witnessPolicy?, logKeyStatement? }`.
   */
  static fromKeyFilePinned(contents, fingerprint, options) {
    if (typeof fingerprint !== 'string') throw new DgspError('argument', 'fingerprint: expected a string');
    return build(() => wasm.TrustRoot.fromKeyFilePinned(bytes(contents, 'contents'), fingerprint), options);
  }

  /**
   * A new root: this one with a witness policy (a C2SP tlog-policy text with a `log` line
   * for this group's origin). `checkAnswer` then also requires the answer's witnessed
   * checkpoint, for the same tree, cosigned by a quorum of the policy's witnesses, each
   * cosignature no older than the maximum age (`witnessed_checkpoint`, `witness_quorum`).
   * With `logKeyStatement` (the group key's statement naming its log key, `GET
   * /v1/log/key`), the statement must verify under the group key and name the policy's
   * log key. Throws a DgspError `trust_root` (the policy does not parse, naming the line;
   * no log line for the group; another log key than the statement's) or
   * `bad_signed_object` (the statement does not verify).
   */
  withWitnessPolicy(policy, logKeyStatement) {
    const p = text(policy, 'witnessPolicy');
    const s = logKeyStatement == null ? undefined : text(logKeyStatement, 'logKeyStatement');
    return new TrustRoot(call(() => this.#inner.withWitnessPolicy(p, s)));
  }

  /**
   * The policy `log` line (`log <vkey>\n`) of the group's log key, from the group key's
   * log-key statement, verified under the group key.
   */
  logLineFromStatement(logKeyStatement) {
    const s = text(logKeyStatement, 'logKeyStatement');
    return call(() => this.#inner.logLineFromStatement(s));
  }

  /** Whether this root has a witness policy. */
  get hasWitnessPolicy() {
    return call(() => this.#inner.hasWitnessPolicy);
  }

  /** The group's fingerprint (hex SHA3-256 of the key's encoding). */
  get fingerprint() {
    return call(() => this.#inner.fingerprint);
  }

  /** The group's parameter set (`sha2-128f`, `slh-dsa-sha2-128f`, ...). */
  get params() {
    return call(() => this.#inner.params);
  }

  /** The signature under the group key (revocation aside); throws a DgspError when it does not verify. */
  verifySignature(message, signature) {
    return JSON.parse(
      call(() => this.#inner.verifySignature(bytes(message, 'message'), bytes(signature, 'signature'))),
    );
  }

  /**
   * A gateway's `POST /v1/verify` answer checked whole, with the signed snapshot its
   * checkpoint names (or null). `policy`: `{ max_age_ms, now_unix_ms, min_snapshot?,
   * clock_tolerance_ms? }` (`clock_tolerance_ms`: how far the checkpoint's signed time may be
   * ahead of `now_unix_ms`, default DEFAULT_CLOCK_TOLERANCE_MS).
   */
  checkAnswer(message, signature, answer, snapshot, policy) {
    if (policy === null || typeof policy !== 'object') {
      throw new DgspError('argument', 'policy: expected { max_age_ms, now_unix_ms, min_snapshot?, clock_tolerance_ms? }');
    }
    const maxAge = num(policy.max_age_ms, 'policy.max_age_ms');
    const now = num(policy.now_unix_ms, 'policy.now_unix_ms');
    const min = policy.min_snapshot == null ? undefined : num(policy.min_snapshot, 'policy.min_snapshot');
    const tolerance = policy.clock_tolerance_ms == null
      ? undefined
      : num(policy.clock_tolerance_ms, 'policy.clock_tolerance_ms');
    const snap = snapshot == null ? undefined : jsonBytes(snapshot, 'snapshot');
    return JSON.parse(
      call(() =>
        this.#inner.checkAnswer(
          bytes(message, 'message'),
          bytes(signature, 'signature'),
          jsonBytes(answer, 'answer'),
          snap,
          maxAge,
          now,
          min,
          tolerance,
        ),
      ),
    );
  }

  /** Whether `(id, pi)` is the correct opening of the signature. */
  judge(message, signature, id, pi) {
    const n = num(id, 'id');
    return JSON.parse(
      call(() => this.#inner.judge(bytes(message, 'message'), bytes(signature, 'signature'), n, bytes(pi, 'pi'))),
    );
  }

  /** A signed checkpoint note, verified under the group key and for its log. */
  verifyCheckpoint(note) {
    if (typeof note !== 'string') throw new DgspError('argument', 'note: expected a string');
    return JSON.parse(call(() => this.#inner.verifyCheckpoint(note)));
  }

  /** A signed snapshot (the JSON served at /v1/revocations/snapshots/{n}), verified; returns its record. */
  verifySnapshot(snapshot) {
    return JSON.parse(call(() => this.#inner.verifySnapshot(jsonBytes(snapshot, 'snapshot'))));
  }

  /** Frees the WebAssembly memory now (otherwise the garbage collector does). */
  free() {
    this.#inner.free();
  }
}

/** The first failed check of a report, or null. */
export function firstFailure(report) {
  return report.checks.find((c) => !c.passed) ?? null;
}

/** The version of the WebAssembly side. */
export function version() {
  return call(() => wasm.version());
}
