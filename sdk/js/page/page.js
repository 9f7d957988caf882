// The verification page: reads the group key from the gateway that served it (shown, and
// optionally pinned to a fingerprint the person got elsewhere), asks the gateway for its
// answer and the signed snapshot the answer names, and checks all of it here with the
// @dgsp/verifier WebAssembly module. Only same-origin requests; no third-party resources.
import { init, TrustRoot, DgspError, GATEWAY_WORD, firstFailure, version } from './index.js';

const $ = (id) => document.getElementById(id);
const gateway = window.location.origin;
let group = null; // { public_key, fingerprint, params }

function b64encode(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
function b64decode(text) {
  const bin = atob(text.replace(/\s+/g, ''));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}
const looksBase64 = (text) => /^[A-Za-z0-9+/=\s]+$/.test(text) && text.trim().length > 0;
const fmtTime = (ms) => (ms == null ? 'no signed time' : `${new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}`);
const fmtAge = (ms) => (ms < 0 ? `${(-ms / 1000).toFixed(1)} s in the future` : `${(ms / 1000).toFixed(1)} s ago`);

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}

/** The witness policy and log-key statement typed or loaded, or nulls. */
function witnessOptions() {
  const policy = $('witness-policy').value.trim();
  const statement = $('log-key-statement').value.trim();
  return {
    witnessPolicy: policy ? `${policy}\n` : null,
    logKeyStatement: policy && statement ? `${statement}\n` : null,
  };
}

/**
 * The trust root: the gateway's key, pinned when a fingerprint is given, with the witness
 * policy when one is given.
 */
function trustRoot() {
  const pin = $('pin').value.trim().toLowerCase();
  const options = witnessOptions();
  if (!pin) return { root: TrustRoot.fromKeyFile(group.public_key, options), pinned: false };
  return { root: TrustRoot.fromKeyFilePinned(group.public_key, pin, options), pinned: true };
}

/** Says whether a witness policy is in force, and whether it holds for this group's key. */
function showWitnessMode() {
  const t = $('witness-mode');
  if (!group) return;
  const options = witnessOptions();
  if (!options.witnessPolicy) {
    t.className = 'trust gateway';
    t.dataset.witnesses = 'none';
    t.textContent = "No witness policy: the checkpoint's witnesses are not checked, so nothing shows the gateway's log is the one everyone else sees.";
    return;
  }
  try {
    TrustRoot.fromKeyFile(group.public_key, options).free();
    t.className = 'trust pinned';
    t.dataset.witnesses = 'policy';
    t.textContent = options.logKeyStatement
      ? "Witness policy in force; its log key is the one the group key's statement names (checked here)."
      : "Witness policy in force (its log key as you gave it; add the group's log-key statement to check it under the group key).";
  } catch (e) {
    t.className = 'trust mismatch';
    t.dataset.witnesses = 'invalid';
    t.textContent = `The witness policy does not hold: ${e?.message ?? e}. Nothing will be accepted.`;
  }
}

function showTrustMode() {
  const t = $('trust-mode');
  if (!group) return;
  const pin = $('pin').value.trim().toLowerCase();
  if (!pin) {
    t.className = 'trust gateway';
    t.textContent = "Trusting the gateway's key: no fingerprint pinned. Anyone who controls this gateway could substitute another group.";
  } else if (pin === group.fingerprint.toLowerCase()) {
    t.className = 'trust pinned';
    t.textContent = 'Pinned: the key served matches the fingerprint you gave (checked here).';
  } else {
    t.className = 'trust mismatch';
    t.textContent = 'Mismatch: the key served does NOT have the fingerprint you pinned. Nothing will be accepted.';
  }
}

async function readInput(fileId, textId, what) {
  const text = $(textId).value.trim();
  if (text) {
    try {
      return b64decode(text);
    } catch {
      throw new DgspError('argument', `the pasted ${what} is not base64`);
    }
  }
  const f = $(fileId).files[0];
  if (!f) throw new DgspError('argument', `choose the ${what} file (or paste it as base64)`);
  return new Uint8Array(await f.arrayBuffer());
}

/** A signature file holds base64 text (as `dgsp-manager member sign` writes it) or raw bytes. */
function signatureBytes(raw) {
  const text = new TextDecoder().decode(raw);
  if (looksBase64(text)) {
    try {
      return b64decode(text);
    } catch { /* raw after all */ }
  }
  return raw;
}

async function getJson(path, init) {
  const res = await fetch(gateway + path, init);
  let body = null;
  try {
    body = await res.json();
  } catch { /* not JSON */ }
  return { ok: res.ok, status: res.status, body };
}

function setVerdict(kind, word, why) {
  $('verdict').className = `verdict ${kind}`;
  $('verdict').dataset.verdict = kind;
  $('verdict-word').textContent = word;
  $('verdict-why').textContent = why;
}

function setStatus(kind, text) {
  const s = $('signer-status');
  s.replaceChildren(el('span', { class: `status-${kind}` }, kind), ` — ${text}`);
  s.dataset.status = kind;
}

async function verify() {
  const button = $('verify');
  button.disabled = true;
  button.textContent = 'Verifying…';
  $('result').hidden = false;
  for (const id of ['signer-status', 'snapshot-info', 'checkpoint-info', 'witness-info', 'key-info', 'gateway-said']) $(id).textContent = '';
  $('checks').replaceChildren();
  setVerdict('pending', 'Checking…', '');
  try {
    await run();
  } catch (e) {
    const kind = e instanceof DgspError ? e.kind.replace(/_/g, ' ') : '';
    const msg = String(e?.message ?? e);
    const what = kind && !msg.startsWith(kind) ? `${kind}: ${msg}` : msg;
    setVerdict('not-valid', 'Not valid', what);
    if (!$('signer-status').textContent) setStatus('unknown', 'nothing could be proven');
  } finally {
    button.disabled = false;
    button.textContent = 'Verify';
  }
}

async function run() {
  const message = await readInput('message-file', 'message-b64', 'signed');
  const signature = signatureBytes(await readInput('signature-file', 'signature-b64', 'signature'));
  const maxAge = Number($('max-age').value);
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) throw new DgspError('argument', 'the maximum age must be a whole number of seconds');
  const minRaw = $('min-snapshot').value.trim();
  const minSnapshot = minRaw === '' ? null : Number(minRaw);

  const { root, pinned } = trustRoot();
  $('key-info').replaceChildren(
    `${root.params}, fingerprint `, el('code', { class: 'fp' }, root.fingerprint), ' — ',
    el('span', { class: `badge ${pinned ? 'here' : 'gw'}` }, pinned ? 'pinned by you (checked here)' : "trusting the gateway's key"),
  );

  // The gateway's word, then everything checked here.
  const asked = await getJson('/v1/verify', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: b64encode(message), signature: b64encode(signature) }),
  });
  const answer = asked.body;
  if (!answer || typeof answer.valid !== 'boolean') {
    throw new DgspError('malformed', `the gateway did not answer (HTTP ${asked.status}${answer?.detail ? `: ${answer.detail}` : ''})`);
  }
  $('gateway-said').replaceChildren(
    el('code', {}, answer.status), answer.valid ? ' (valid)' : ' (not valid)', ' ',
    el('span', { class: 'badge gw' }, "the gateway's word"),
  );
  const n = answer.freshness?.checkpoint?.snapshot_number;
  let snapshot = null;
  if (n != null) {
    const s = await getJson(`/v1/revocations/snapshots/${n}`);
    if (s.ok) snapshot = s.body;
  }
  const now = Date.now();
  const report = root.checkAnswer(message, signature, answer, snapshot, {
    max_age_ms: maxAge * 1000, now_unix_ms: now, min_snapshot: minSnapshot,
  });

  // The snapshot and the checkpoint, each shown only as far as it verified here.
  const passed = (name) => report.checks.find((c) => c.check === name)?.passed;
  if (snapshot && passed('snapshot_signature')) {
    const rec = root.verifySnapshot(snapshot);
    $('snapshot-info').replaceChildren(
      `#${rec.number}, signed at ${fmtTime(rec.time_unix_ms)}, ${rec.count} revoked `,
      el('span', { class: 'badge here' }, 'signature checked here'),
    );
  } else {
    $('snapshot-info').textContent = n == null ? 'the answer names no snapshot' : `#${n}: could not be verified`;
  }
  const note = answer.freshness?.checkpoint?.note;
  if (note && passed('checkpoint_signature')) {
    const cp = root.verifyCheckpoint(note);
    $('checkpoint-info').replaceChildren(
      `signed at ${fmtTime(cp.time_unix_ms)} (${cp.time_unix_ms == null ? '?' : fmtAge(now - cp.time_unix_ms)}; maximum ${maxAge} s), ${cp.size} log entries `,
      el('span', { class: 'badge here' }, 'signature checked here'),
    );
  } else {
    $('checkpoint-info').textContent = 'no checkpoint that verifies under the group key';
  }

  const quorum = report.checks.find((c) => c.check === 'witness_quorum');
  if (!report.witnesses_checked) {
    $('witness-info').textContent = 'not checked (no witness policy given)';
  } else {
    $('witness-info').replaceChildren(
      `${quorum.passed && passed('witnessed_checkpoint') ? 'quorum met' : 'quorum NOT met'}: ${quorum.detail} `,
      el('span', { class: 'badge here' }, 'checked here'),
    );
  }
  $('witness-info').dataset.witnessed = String(report.witnesses_checked && quorum.passed && passed('witnessed_checkpoint'));

  for (const c of report.checks) {
    const gw = c.check === GATEWAY_WORD;
    $('checks').append(el('tr', { 'data-check': c.check, 'data-passed': String(c.passed) },
      el('td', {}, c.check),
      el('td', {}, el('span', { class: `badge ${c.passed ? 'pass' : 'fail'}` }, c.passed ? '✓ holds' : '✗ fails')),
      el('td', {}, el('span', { class: `badge ${gw ? 'gw' : 'here'}` }, gw ? "the gateway's word" : 'checked here')),
      el('td', {}, c.detail),
    ));
  }

  // Signer status: proven here, or unknown.
  const proof = report.checks.find((c) => c.check === 'revocation_proof');
  const snapOk = passed('snapshot_signature') && passed('snapshot_named');
  // Only a signature that verifies says whose certificate (zeta) the proof is about.
  const sigOk = passed('signature');
  const revoked = sigOk && snapOk && proof && !proof.passed && /IS revoked/.test(proof.detail);
  if (!sigOk) setStatus('unknown', 'the signature does not verify, so it names no signer');
  else if (proof?.passed && snapOk) setStatus('current', `proven not revoked in snapshot #${n} (checked here)`);
  else if (revoked) setStatus('revoked', `proven revoked in snapshot #${n} (checked here)`);
  else setStatus('unknown', `not proven here; the gateway says ${answer.status}`);

  // The first failure checked here, before the gateway's word.
  const fail = report.checks.find((c) => !c.passed && c.check !== GATEWAY_WORD) ?? firstFailure(report);
  if (report.valid) setVerdict('valid', 'Valid', 'The signature verifies under the group key and its signer is proven not revoked in a fresh signed snapshot.');
  else if (revoked) setVerdict('revoked', 'Revoked', "The signature verifies, but its signer's certificate is revoked.");
  else setVerdict('not-valid', 'Not valid', `${fail.check} fails: ${fail.detail}`);
  root.free();
}

async function main() {
  $('gateway-url').textContent = gateway;
  await init();
  $('sdk-version').textContent = `Verifier ${version()}.`;
  const g = await getJson('/v1/group');
  if (!g.ok || !g.body?.public_key) {
    $('group-loading').textContent = `Could not read the group key from ${gateway}/v1/group (HTTP ${g.status}).`;
    return;
  }
  group = g.body;
  const root = TrustRoot.fromKeyFile(group.public_key);
  $('group-params').textContent = root.params;
  $('group-fingerprint').textContent = group.fingerprint;
  if (root.fingerprint !== String(group.fingerprint).toLowerCase()) {
    $('group-fingerprint').textContent += ' (does not match the key served!)';
  }
  root.free();
  $('group-loading').hidden = true;
  $('group-info').hidden = false;
  showTrustMode();
  showWitnessMode();
  $('pin').addEventListener('input', showTrustMode);
  for (const id of ['witness-policy', 'log-key-statement']) $(id).addEventListener('input', showWitnessMode);
  $('witness-policy-file').addEventListener('change', async () => {
    const f = $('witness-policy-file').files[0];
    if (f) $('witness-policy').value = await f.text();
    showWitnessMode();
  });
  $('verify').disabled = false;
  $('verify').addEventListener('click', verify);
  document.body.dataset.ready = 'true';
}

main().catch((e) => {
  $('group-loading').textContent = `The verifier could not start: ${e?.message ?? e}`;
});
