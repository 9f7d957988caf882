// The shared conformance vectors (sdk/vectors/conformance.json, format in
// sdk/vectors/README.md): every case must get its `expect` exactly, as the Rust crate's
// sdk/rust/tests/conformance.rs `run()` computes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { TrustRoot, DgspError, CHECKS, DEFAULT_CLOCK_TOLERANCE_MS } from '../node.js';

const doc = JSON.parse(
  readFileSync(new URL('../../vectors/conformance.json', import.meta.url), 'utf8'),
);
const d = (s) => Buffer.from(s, 'base64');

function errorOf(e) {
  if (e instanceof DgspError) return { error: e.kind };
  throw e;
}

/** What this SDK says about one case, in the vectors' `expect` form. */
function run(groups, c) {
  let root;
  try {
    root = TrustRoot.fromKeyBytes(d(groups[c.group]), {
      witnessPolicy: c.witness_policy, logKeyStatement: c.log_key_statement,
    });
  } catch (e) {
    return errorOf(e);
  }
  const msg = d(c.message);
  try {
    switch (c.kind) {
      case 'signature': {
        const i = root.verifySignature(msg, d(c.signature));
        return { valid: true, zeta: i.zeta };
      }
      case 'answer': {
        const p = c.policy;
        const r = root.checkAnswer(msg, d(c.signature), JSON.stringify(c.answer),
          c.snapshot === null ? null : JSON.stringify(c.snapshot),
          { max_age_ms: p.max_age_ms, min_snapshot: p.min_snapshot, now_unix_ms: p.now_unix_ms,
            clock_tolerance_ms: p.clock_tolerance_ms });
        return { valid: r.valid, failed_checks: r.checks.filter((x) => !x.passed).map((x) => x.check) };
      }
      case 'judge': {
        const j = root.judge(msg, d(c.signature), c.id, d(c.pi));
        return { correct: j.correct, signature_valid: j.signature_valid, opening_matches: j.opening_matches };
      }
      default:
        throw new Error(`unknown case kind ${c.kind}`);
    }
  } catch (e) {
    return errorOf(e);
  } finally {
    root.free();
  }
}

test('the vectors file', () => {
  assert.equal(doc.format, 'dgsp-conformance-v1');
  assert.ok(doc.cases.length >= 15, `${doc.cases.length} cases`);
});

for (const c of doc.cases) {
  test(`conformance: ${c.name}`, () => {
    assert.deepStrictEqual(run(doc.groups, c), c.expect);
  });
}

test('answers and snapshots may also be passed parsed, or as bytes', () => {
  const c = doc.cases.find((x) => x.kind === 'answer' && x.expect.valid);
  const root = TrustRoot.fromKeyBytes(d(doc.groups[c.group]));
  const policy = c.policy;
  const asObject = root.checkAnswer(d(c.message), d(c.signature), c.answer, c.snapshot, policy);
  const asBytes = root.checkAnswer(d(c.message), d(c.signature),
    Buffer.from(JSON.stringify(c.answer)), new TextEncoder().encode(JSON.stringify(c.snapshot)), policy);
  assert.equal(asObject.valid, true);
  assert.deepStrictEqual(asObject, asBytes);
  const rec = root.verifySnapshot(c.snapshot);
  assert.equal(rec.number, c.snapshot.record?.number ?? rec.number);
  assert.equal(rec.group, root.fingerprint);
});

test('a checkpoint from the future: refused by name, unless the caller tolerates the skew', () => {
  const c = doc.cases.find((x) => x.name === 'a: checkpoint from the future');
  const root = TrustRoot.fromKeyBytes(d(doc.groups[c.group]));
  const { max_age_ms, now_unix_ms } = c.policy;
  const args = [d(c.message), d(c.signature), c.answer, c.snapshot];
  const r = root.checkAnswer(...args, { max_age_ms, now_unix_ms });
  assert.equal(r.valid, false);
  assert.deepStrictEqual(r.checks.filter((x) => !x.passed).map((x) => x.check), ['future_checkpoint']);
  assert.match(r.checks.find((x) => x.check === 'future_checkpoint').detail, /ahead of this clock/);
  assert.equal(r.checks.find((x) => x.check === 'checkpoint_age').passed, true, 'the age alone lets it through');
  assert.equal(root.checkAnswer(...args, { max_age_ms, now_unix_ms, clock_tolerance_ms: 900_000 }).valid, true);
  assert.equal(DEFAULT_CLOCK_TOLERANCE_MS, 5000);
  assert.deepStrictEqual(r.checks.map((x) => x.check),
    CHECKS.slice(0, -1).filter((n) => !n.startsWith('witness')));
  assert.equal(r.witnesses_checked, false);
  assert.throws(() => root.checkAnswer(...args, { max_age_ms, now_unix_ms, clock_tolerance_ms: -1 }),
    (e) => e.kind === 'argument');
  root.free();
});

test('typed errors', () => {
  assert.throws(() => TrustRoot.fromKeyBytes(new Uint8Array([1, 2, 3])),
    (e) => e instanceof DgspError && e.kind === 'trust_root');
  const key = Buffer.from(doc.groups.a, 'base64');
  assert.throws(() => TrustRoot.fromKeyFilePinned(doc.groups.a, '00'.repeat(32)),
    (e) => e instanceof DgspError && e.kind === 'trust_root');
  const root = TrustRoot.fromKeyBytes(key);
  assert.equal(TrustRoot.fromKeyFilePinned(doc.groups.a + '\n', root.fingerprint).fingerprint, root.fingerprint);
  assert.throws(() => root.verifySignature('m', 'garbage'), (e) => e.kind === 'malformed');
  assert.throws(() => root.checkAnswer('m', 'x', '{}', null, { max_age_ms: -1, now_unix_ms: 0 }),
    (e) => e.kind === 'argument');
  assert.throws(() => root.verifyCheckpoint('not a note'), (e) => e.kind === 'bad_signed_object');
});

test('a witness policy: the quorum names stale witnesses; the report says whether witnesses were checked', () => {
  const met = doc.cases.find((x) => x.name === 'fips205: witnessed, quorum met');
  const stale = doc.cases.find((x) => x.name === 'fips205: witnessed, a stale witness timestamp');
  const key = d(doc.groups[met.group]);
  const root = TrustRoot.fromKeyBytes(key, {
    witnessPolicy: met.witness_policy, logKeyStatement: met.log_key_statement,
  });
  assert.equal(root.hasWitnessPolicy, true);
  const check = (r, c) => r.checkAnswer(d(c.message), d(c.signature), c.answer, c.snapshot, c.policy);
  const ok = check(root, met);
  assert.equal(ok.valid, true);
  assert.equal(ok.witnesses_checked, true);
  assert.deepStrictEqual(ok.checks.map((x) => x.check), CHECKS.slice(0, -1));
  const r = check(root, stale);
  assert.deepStrictEqual(r.checks.filter((x) => !x.passed).map((x) => x.check), ['witness_quorum']);
  assert.match(r.checks.find((x) => x.check === 'witness_quorum').detail, /: w2$/);
  const plain = TrustRoot.fromKeyBytes(key);
  assert.equal(plain.hasWitnessPolicy, false);
  const unchecked = check(plain, stale);
  assert.equal(unchecked.valid, true);
  assert.equal(unchecked.witnesses_checked, false);
  const line = plain.logLineFromStatement(met.log_key_statement);
  assert.ok(met.witness_policy.includes(line), line);
  assert.equal(plain.withWitnessPolicy(met.witness_policy).hasWitnessPolicy, true);
  assert.throws(() => plain.withWitnessPolicy(met.witness_policy.replace('quorum two-of-three', 'quorum x')),
    (e) => e.kind === 'trust_root' && /policy line 7/.test(e.message));
  assert.throws(() => TrustRoot.fromKeyBytes(d(doc.groups.a)).logLineFromStatement(met.log_key_statement),
    (e) => e.kind === 'bad_signed_object');
  assert.throws(() => TrustRoot.fromKeyBytes(key, { logKeyStatement: met.log_key_statement }),
    (e) => e.kind === 'argument');
  for (const x of [root, plain]) x.free();
});
