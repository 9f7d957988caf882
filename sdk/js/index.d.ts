// Types of @dgsp/verifier (both entries: the browser one, index.js, and the Node one, node.js).

/** Bytes, or a string taken as its UTF-8 (a signature file's base64 text is accepted as is). */
export type Bytes = Uint8Array | ArrayBuffer | ArrayBufferView | string;
/** A JSON document: its text, its bytes, or the parsed value. */
export type Json = Bytes | object;

export type CheckName =
  | 'gateway_status'
  | 'signature'
  | 'checkpoint_signature'
  | 'checkpoint_age'
  | 'future_checkpoint'
  | 'witnessed_checkpoint'
  | 'witness_quorum'
  | 'snapshot_signature'
  | 'snapshot_named'
  | 'revocation_proof'
  | 'min_snapshot';

/** The error kinds: the Rust crate's `Error` variants, and two of this package. */
export type ErrorKind =
  | 'trust_root'
  | 'malformed'
  | 'signature'
  | 'bad_signed_object'
  | 'argument'
  | 'not_initialized';

/** A check that could not be made at all (a failed check is a negative report instead). */
export class DgspError extends Error {
  readonly name: 'DgspError';
  readonly kind: ErrorKind;
}

/** What the caller accepts; there is no default clock: pass `Date.now()`. */
export interface Policy {
  /** Oldest acceptable checkpoint, in ms before `now_unix_ms`. */
  max_age_ms: number;
  /** Now, Unix ms. */
  now_unix_ms: number;
  /** Lowest acceptable snapshot number. */
  min_snapshot?: number | null;
  /**
   * How far, in ms, the checkpoint's signed time may be ahead of `now_unix_ms` (clock skew);
   * further ahead fails `future_checkpoint`. Default {@link DEFAULT_CLOCK_TOLERANCE_MS}.
   */
  clock_tolerance_ms?: number | null;
}

export interface Check {
  check: CheckName;
  passed: boolean;
  /** What was found, in words. */
  detail: string;
}

export interface AnswerReport {
  /** True exactly when every check held. */
  valid: boolean;
  /** The gateway's own status word (`ok`, `revoked`, `stale`, ...): its word, not checked. */
  gateway_status: string;
  gateway_valid: boolean;
  checks: Check[];
  /**
   * Whether the checkpoint's witnesses were checked (`witnessed_checkpoint`,
   * `witness_quorum`): only when the root has a witness policy.
   */
  witnesses_checked: boolean;
}

/** A witness policy for a trust root. */
export interface TrustRootOptions {
  /** A C2SP tlog-policy text with a `log` line for the group's origin. */
  witnessPolicy?: Bytes | null;
  /** The group key's statement naming its log key (`GET /v1/log/key`); must name the policy's log key. */
  logKeyStatement?: Bytes | null;
}

export interface SignatureInfo {
  params: string;
  /** The certificate serial the signature carries (hex). */
  zeta: string;
}

export interface JudgeReport {
  correct: boolean;
  signature_valid: boolean;
  opening_matches: boolean;
  params: string;
  detail: string | null;
}

export interface CheckpointInfo {
  origin: string;
  size: number;
  head: string;
  time_unix_ms: number | null;
  snapshot_number: number | null;
}

export interface SnapshotRecord {
  group: string;
  number: number;
  log_seq: number;
  count: number;
  root: string;
  prev_hash: string;
  time_unix_ms: number;
}

export class TrustRoot {
  private constructor();
  static fromKeyBytes(key: Bytes, options?: TrustRootOptions): TrustRoot;
  static fromKeyFile(contents: Bytes, options?: TrustRootOptions): TrustRoot;
  static fromKeyFilePinned(contents: Bytes, fingerprint: string, options?: TrustRootOptions): TrustRoot;
  withWitnessPolicy(policy: Bytes, logKeyStatement?: Bytes | null): TrustRoot;
  logLineFromStatement(logKeyStatement: Bytes): string;
  readonly hasWitnessPolicy: boolean;
  readonly fingerprint: string;
  readonly params: string;
  verifySignature(message: Bytes, signature: Bytes): SignatureInfo;
  checkAnswer(
    message: Bytes,
    signature: Bytes,
    answer: Json,
    snapshot: Json | null | undefined,
    policy: Policy,
  ): AnswerReport;
  judge(message: Bytes, signature: Bytes, id: number | bigint, pi: Bytes): JudgeReport;
  verifyCheckpoint(note: string): CheckpointInfo;
  verifySnapshot(snapshot: Json): SnapshotRecord;
  free(): void;
}

export const CHECKS: readonly CheckName[];
/** The default `Policy.clock_tolerance_ms` (5 s). */
export const DEFAULT_CLOCK_TOLERANCE_MS: 5000;
/** The one check that is the gateway's word; every other is computed locally. */
export const GATEWAY_WORD: 'gateway_status';
export function firstFailure(report: AnswerReport): Check | null;
export function version(): string;
/** Browser: instantiates the WebAssembly module (fetches it next to index.js unless given). Node: no-op. */
export function init(source?: string | URL | Response | BufferSource | WebAssembly.Module): Promise<void>;
