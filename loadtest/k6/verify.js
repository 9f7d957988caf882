// POST /v1/verify over a realistic mix of distinct signatures: valid, revoked (answered
// without cryptography, as the scheme checks revocation first) and invalid (a valid
// signature shown with another message, or a flipped byte). Each iteration takes the next
// item, so no signature is sent twice in a run; the answer's `status` must equal the
// item's `expect`.

import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import { FIXTURES, GATEWAY, JSON_POST, index, scenario, thresholds } from './lib.js';

// Request bodies are built once, at load time, not per iteration.
const items = new SharedArray('verify', () =>
  JSON.parse(open(`${FIXTURES}/verify.json`)).map((v) => ({
    body: JSON.stringify({ message: v.message, signature: v.signature }),
    expect: v.expect,
  })),
);

export const options = {
  scenarios: { verify: scenario(items.length, true) },
  // [p95, p99] in ms per mode.
  thresholds: thresholds({ saturation: [60, 100], rate: [10, 25] }),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

const params = Object.assign({ tags: { name: 'POST /v1/verify' } }, JSON_POST);

export default function () {
  const item = items[index(items.length)];
  const res = http.post(`${GATEWAY}/v1/verify`, item.body, params);
  check(res, {
    'status 200': (r) => r.status === 200,
    'answer as expected': (r) => r.status === 200 && r.json('status') === item.expect,
  });
}
