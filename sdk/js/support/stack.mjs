// Test helpers: a live registry + gateway (support/stack.sh) and the gateway round trip the
// SDK's users make: POST /v1/verify, then the signed snapshot its checkpoint names.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const script = new URL('./stack.sh', import.meta.url).pathname;

/** Starts a stack (extra gateway arguments optional); returns its description. */
export function startStack(gatewayArgs = []) {
  const state = mkdtempSync(join(tmpdir(), 'dgsp-js-stack-'));
  const out = execFileSync('bash', [script, 'start', state, ...gatewayArgs], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 180_000,
  });
  const s = JSON.parse(out.trim().split('\n').pop());
  s.read = (f) => readFileSync(s[f]);
  s.revoke = (username) =>
    execFileSync('bash', [script, 'revoke', state, username], { stdio: ['ignore', 'ignore', 'inherit'] });
  s.stop = () => {
    execFileSync('bash', [script, 'stop', state], { stdio: 'inherit' });
    if (!process.env.DGSP_KEEP_STACK) rmSync(state, { recursive: true, force: true });
  };
  return s;
}

/** The gateway's answer for (message, signature file contents), and the snapshot it names. */
export async function askGateway(gateway, message, signature) {
  const res = await fetch(`${gateway}/v1/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      message: Buffer.from(message).toString('base64'),
      signature: Buffer.from(signature).toString('utf8').trim(),
    }),
  });
  const answer = await res.json();
  const n = answer?.freshness?.checkpoint?.snapshot_number;
  let snapshot = null;
  if (n != null) {
    const s = await fetch(`${gateway}/v1/revocations/snapshots/${n}`);
    if (s.ok) snapshot = await s.json();
  }
  return { status: res.status, answer, snapshot };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
