// POST /v1/verify/batch with BATCH (default 32) distinct items per request, from the same
// fixtures as verify.js; every result must match its item's `expect`. Each batch is sent
// once per run.

import http from 'k6/http';
import { check } from 'k6';
import { GATEWAY, fixtures, index, jsonPost, scriptOptions } from './lib.js';

const BATCH = parseInt(__ENV.BATCH || '32', 10);

const batches = fixtures('batches', 'verify.json', (all) => {
  const out = [];
  for (let i = 0; i + BATCH <= all.length; i += BATCH) {
    const part = all.slice(i, i + BATCH);
    out.push({
      body: JSON.stringify({ items: part.map((v) => ({ message: v.message, signature: v.signature })) }),
      expect: part.map((v) => v.expect),
    });
  }
  return out;
});

// Per request of BATCH (32) items, [p95, p99] in ms per mode.
export const options = scriptOptions('batch', batches.length, true, { saturation: [200, 300], rate: [100, 200] });

const params = jsonPost('POST /v1/verify/batch');

export default function () {
  const b = batches[index(batches.length)];
  const res = http.post(`${GATEWAY}/v1/verify/batch`, b.body, params);
  check(res, {
    'status 200': (r) => r.status === 200,
    'every result as expected': (r) => {
      if (r.status !== 200) return false;
      const got = r.json('results.#.status');
      return Array.isArray(got) && got.length === b.expect.length && got.every((s, i) => s === b.expect[i]);
    },
  });
}
