// The SDK against a live registry and gateway (support/stack.sh: binaries from
// $DGSP_BIN, default ~/.cache/dgsp/target/debug): a valid signature, a stale checkpoint, a
// checkpoint from the future, a tampered proof, another group, and a revocation seen through the gateway and proven
// against its signed snapshot. Skipped (not failed) when the binaries are missing and
// DGSP_JS_REQUIRE_LIVE is unset.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { TrustRoot, DgspError, firstFailure } from '../node.js';
import { startStack, askGateway, sleep } from '../support/stack.mjs';

const bin = process.env.DGSP_BIN ?? `${homedir()}/.cache/dgsp/target/debug`;
const have = ['dgsp-registry', 'dgsp-gateway', 'dgsp-manager'].every((b) => existsSync(`${bin}/${b}`));
if (!have && process.env.DGSP_JS_REQUIRE_LIVE) throw new Error(`no DGSP binaries in ${bin}`);
const skip = have ? false : `no DGSP binaries in ${bin}`;

let s;
let root;
let message;
const policy = () => ({ max_age_ms: 300_000, now_unix_ms: Date.now() });
const failed = (r) => r.checks.filter((c) => !c.passed).map((c) => c.check);

before(() => {
  if (skip) return;
  s = startStack();
  root = TrustRoot.fromKeyFile(s.read('group_key'));
  message = s.read('message');
});
after(() => s?.stop());

test('a valid signature, checked whole', { skip }, async () => {
  const sig = s.read('alice_sig');
  assert.equal(root.verifySignature(message, sig).params, 'slh-dsa-sha2-128f');
  const { answer, snapshot } = await askGateway(s.gateway, message, sig);
  assert.equal(answer.status, 'ok');
  assert.ok(snapshot, 'the gateway serves the snapshot its checkpoint names');
  const r = root.checkAnswer(message, sig, answer, snapshot, policy());
  assert.deepStrictEqual(failed(r), []);
  assert.equal(r.valid, true);
  assert.equal(r.gateway_status, 'ok');
  // The key as GET /v1/group serves it, pinned to the fingerprint of the key file.
  const group = await (await fetch(`${s.gateway}/v1/group`)).json();
  const pinned = TrustRoot.fromKeyFilePinned(group.public_key, root.fingerprint);
  assert.equal(pinned.fingerprint, group.fingerprint);
});

test('a stale checkpoint (the caller\'s clock an hour ahead)', { skip }, async () => {
  const sig = s.read('alice_sig');
  const { answer, snapshot } = await askGateway(s.gateway, message, sig);
  const r = root.checkAnswer(message, sig, answer, snapshot,
    { max_age_ms: 300_000, now_unix_ms: Date.now() + 3_600_000 });
  assert.equal(r.valid, false);
  assert.deepStrictEqual(failed(r), ['checkpoint_age']);
});

test('a checkpoint from the future (the caller\'s clock ten minutes behind)', { skip }, async () => {
  const sig = s.read('alice_sig');
  const { answer, snapshot } = await askGateway(s.gateway, message, sig);
  const behind = Date.now() - 600_000;
  const r = root.checkAnswer(message, sig, answer, snapshot, { max_age_ms: 300_000, now_unix_ms: behind });
  assert.equal(r.valid, false);
  assert.deepStrictEqual(failed(r), ['future_checkpoint']);
  assert.match(firstFailure(r).detail, /ahead of this clock/);
  const lax = root.checkAnswer(message, sig, answer, snapshot,
    { max_age_ms: 300_000, now_unix_ms: behind, clock_tolerance_ms: 900_000 });
  assert.deepStrictEqual(failed(lax), []);
});

test('a tampered proof', { skip }, async () => {
  const sig = s.read('alice_sig');
  const { answer, snapshot } = await askGateway(s.gateway, message, sig);
  const proof = Buffer.from(answer.revocation.proof.encoded, 'base64');
  proof[proof.length - 1] ^= 1;
  answer.revocation.proof.encoded = proof.toString('base64');
  const r = root.checkAnswer(message, sig, answer, snapshot, policy());
  assert.equal(r.valid, false);
  assert.equal(firstFailure(r).check, 'revocation_proof');
  assert.deepStrictEqual(failed(r), ['revocation_proof']);
});

test('a signature with a flipped byte', { skip }, async () => {
  const sig = Buffer.from(s.read('alice_sig').toString('utf8').trim(), 'base64');
  sig[sig.length - 40] ^= 1;
  assert.throws(() => root.verifySignature(message, sig), (e) => e instanceof DgspError && e.kind === 'signature');
  const { answer, snapshot } = await askGateway(s.gateway, message, sig.toString('base64'));
  assert.equal(answer.valid, false);
  const r = root.checkAnswer(message, sig, answer, snapshot, policy());
  assert.equal(r.valid, false);
  assert.ok(failed(r).includes('signature'), failed(r).join());
});

test('another group\'s key: not valid', { skip }, async () => {
  const other = TrustRoot.fromKeyFile(s.read('other_key'));
  const sig = s.read('alice_sig');
  assert.throws(() => other.verifySignature(message, sig), (e) => e.kind === 'signature');
  const { answer, snapshot } = await askGateway(s.gateway, message, sig);
  const r = other.checkAnswer(message, sig, answer, snapshot, policy());
  assert.equal(r.valid, false);
  assert.deepStrictEqual(failed(r).slice(0, 3), ['signature', 'checkpoint_signature', 'checkpoint_age']);
  assert.throws(() => TrustRoot.fromKeyFilePinned(s.read('group_key'), other.fingerprint),
    (e) => e.kind === 'trust_root');
});

test('after `operator revoke`: revoked, proven; the other member stays valid', { skip, timeout: 120_000 }, async () => {
  s.revoke('bob');
  const sig = s.read('bob_sig');
  let got;
  for (let i = 0; i < 300; i++) {
    got = await askGateway(s.gateway, message, sig);
    if (got.answer.status === 'revoked' && got.snapshot) break;
    await sleep(100);
  }
  assert.equal(got.answer.status, 'revoked', JSON.stringify(got.answer));
  const r = root.checkAnswer(message, sig, got.answer, got.snapshot, policy());
  assert.equal(r.valid, false);
  assert.deepStrictEqual(failed(r), ['gateway_status', 'revocation_proof']);
  assert.match(r.checks.find((c) => c.check === 'revocation_proof').detail, /revoked|in the snapshot|member/i);
  // A gateway that says `ok` for bob is caught by the proof, checked here.
  const lie = structuredClone(got.answer);
  lie.valid = true;
  lie.status = 'ok';
  const l = root.checkAnswer(message, sig, lie, got.snapshot, policy());
  assert.equal(l.valid, false);
  assert.deepStrictEqual(failed(l), ['revocation_proof']);
  // alice, against the new snapshot.
  const a = await askGateway(s.gateway, message, s.read('alice_sig'));
  const ra = root.checkAnswer(message, s.read('alice_sig'), a.answer, a.snapshot, policy());
  assert.equal(ra.valid, true, JSON.stringify(firstFailure(ra)));
});
