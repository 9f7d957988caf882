// The verification page in headless Chromium (Debian's `chromium`, driven by playwright-core):
// a live stack; the page served by the gateway (`--web-dir`) or, for a gateway without that
// option, by serve.mjs on one origin with /v1/* forwarded; then a valid signature (with the
// fingerprint pinned), a tampered signature, a tampered gateway answer (the proof flipped
// in flight), the browser's clock ten minutes behind (the gateway's note from its future)
// and, after `operator revoke`, a revoked signer; served by the gateway, under its
// Content-Security-Policy, with no violation reported. One screenshot per case in
// ../artifacts/. Exits non-zero on any failure.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrustRoot } from '../node.js';
import { startStack, askGateway, sleep } from '../support/stack.mjs';
import { startServer } from './serve.mjs';

const here = new URL('.', import.meta.url).pathname;
const pageDir = join(here, '../dist/page');
const artifacts = join(here, '../artifacts');
const bin = process.env.DGSP_BIN ?? `${homedir()}/.cache/dgsp/target/debug`;
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
assert.ok(existsSync(join(pageDir, 'index.html')), 'run ./build.sh first (dist/page)');
mkdirSync(artifacts, { recursive: true });

const help = execFileSync(`${bin}/dgsp-gateway`, ['serve', '--help'], { encoding: 'utf8' });
const gatewayServes = help.includes('--web-dir');
// Its real path: the gateway serves the page through no symbolic link (a checkout may sit
// below one).
const s = startStack(gatewayServes ? ['--web-dir', realpathSync(pageDir)] : []);
let server;
let browser;
const shots = [];
let failures = 0;
try {
  let origin = s.gateway;
  if (!gatewayServes) {
    server = await startServer(pageDir, s.gateway);
    origin = server.url;
  }
  console.log(`page served by ${gatewayServes ? 'the gateway (--web-dir)' : 'serve.mjs (the gateway has no --web-dir)'} at ${origin}/verify/`);
  const fingerprint = TrustRoot.fromKeyFile(s.read('group_key')).fingerprint; // out of band
  const work = mkdtempSync(join(tmpdir(), 'dgsp-page-'));
  const tamperedSig = join(work, 'tampered.sig');
  const raw = Buffer.from(s.read('alice_sig').toString('utf8').trim(), 'base64');
  raw[raw.length - 40] ^= 1;
  writeFileSync(tamperedSig, raw.toString('base64') + '\n');

  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });

  async function runCase(name, { sig, pin = '', route, clockBehindMs = 0, expect, expectStatus, expectFailed }) {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    const foreign = [];
    page.on('request', (r) => { if (!r.url().startsWith(origin)) foreign.push(r.url()); });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    // A Content-Security-Policy violation is reported on the console, not thrown.
    page.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) errors.push(m.text()); });
    if (route) await page.route('**/v1/verify', route);
    // The browser's clock behind the registry's: the gateway's note is then from its future.
    if (clockBehindMs) await page.clock.setFixedTime(Date.now() - clockBehindMs);
    try {
      const served = await page.goto(`${origin}/verify/`);
      if (gatewayServes) {
        const csp = served.headers()['content-security-policy'] ?? '';
        assert.match(csp, /frame-ancestors 'none'/, `${name}: the page's CSP (${csp})`);
        assert.match(csp, /script-src 'self' 'wasm-unsafe-eval'/, `${name}: the page's CSP (${csp})`);
      }
      await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
      if (pin) await page.fill('#pin', pin);
      await page.setInputFiles('#message-file', s.message);
      await page.setInputFiles('#signature-file', sig);
      await page.click('#verify');
      await page.waitForSelector('#verdict:not([data-verdict="pending"])[data-verdict]', { timeout: 30_000 });
      const verdict = await page.getAttribute('#verdict', 'data-verdict');
      const status = await page.getAttribute('#signer-status', 'data-status');
      const failed = await page.$$eval('#checks tr[data-passed="false"]', (rows) => rows.map((r) => r.dataset.check));
      const why = await page.textContent('#verdict-why');
      const shot = join(artifacts, `${name}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      shots.push(shot);
      assert.equal(verdict, expect, `${name}: verdict ${verdict} (${why})`);
      if (expectStatus) assert.equal(status, expectStatus, `${name}: signer status`);
      if (expectFailed) assert.deepStrictEqual(failed, expectFailed, `${name}: failed checks`);
      assert.deepStrictEqual(foreign, [], `${name}: requests beyond the page's origin`);
      assert.deepStrictEqual(errors, [], `${name}: page errors`);
      console.log(`ok   ${name}: ${verdict}, signer ${status}, failed [${failed.join(', ')}] — ${why}`);
    } catch (e) {
      failures++;
      console.log(`FAIL ${name}: ${e.message}`);
    } finally {
      await context.close();
    }
  }

  await runCase('valid', { sig: s.alice_sig, pin: fingerprint, expect: 'valid', expectStatus: 'current', expectFailed: [] });
  await runCase('tampered-signature', { sig: tamperedSig, expect: 'not-valid', expectStatus: 'unknown' });
  await runCase('tampered-answer', {
    sig: s.alice_sig,
    expect: 'not-valid',
    expectFailed: ['revocation_proof'],
    route: async (route) => {
      const res = await route.fetch();
      const answer = await res.json();
      const proof = Buffer.from(answer.revocation.proof.encoded, 'base64');
      proof[proof.length - 1] ^= 1;
      answer.revocation.proof.encoded = proof.toString('base64');
      await route.fulfill({ response: res, json: answer });
    },
  });
  await runCase('wrong-pin', { sig: s.alice_sig, pin: 'ab'.repeat(32), expect: 'not-valid' });
  await runCase('future-checkpoint', {
    sig: s.alice_sig, clockBehindMs: 600_000, expect: 'not-valid', expectFailed: ['future_checkpoint'],
  });

  s.revoke('bob');
  const message = readFileSync(s.message);
  for (let i = 0; i < 300; i++) {
    const g = await askGateway(s.gateway, message, s.read('bob_sig'));
    if (g.answer.status === 'revoked' && g.snapshot) break;
    await sleep(100);
  }
  await runCase('revoked', { sig: s.bob_sig, expect: 'revoked', expectStatus: 'revoked', expectFailed: ['gateway_status', 'revocation_proof'] });
} finally {
  await browser?.close();
  await server?.close();
  s.stop();
}
console.log('screenshots:');
for (const p of shots) console.log(`  ${p}`);
if (failures) {
  console.log(`${failures} case(s) failed`);
  process.exit(1);
}
console.log('all page cases passed');
