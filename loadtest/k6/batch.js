// POST /v1/verify/batch with BATCH (default 32) distinct items per request, from the same
// fixtures as verify.js; every result must match its item's `expect`. Each batch is sent
// once per run.

import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import { FIXTURES, GATEWAY, JSON_POST, index, scenario, thresholds } from './lib.js';

const BATCH = parseInt(__ENV.BATCH || '32', 10);

const batches = new SharedArray('batches', () => {
  const all = JSON.parse(open(`${FIXTURES}/verify.json`));
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

export const options = {
  scenarios: { batch: scenario(batches.length, true) },
  // Per request of BATCH (32) items, [p95, p99] in ms per mode.
  thresholds: thresholds({ saturation: [200, 300], rate: [100, 200] }),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

const params = Object.assign({ tags: { name: 'POST /v1/verify/batch' } }, JSON_POST);

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
