// POST /v1/verify over a realistic mix of distinct signatures: valid, revoked (answered
// without cryptography, as the scheme checks revocation first) and invalid (a valid
// signature shown with another message, or a flipped byte). Each iteration takes the next
// item, so no signature is sent twice in a run; the answer's `status` must equal the
// item's `expect`.

import http from 'k6/http';
import { check } from 'k6';
import { GATEWAY, fixtures, index, jsonPost, scriptOptions } from './lib.js';

const items = fixtures('verify', 'verify.json', (all) =>
  all.map((v) => ({
    body: JSON.stringify({ message: v.message, signature: v.signature }),
    expect: v.expect,
  })),
);

// [p95, p99] in ms per mode.
export const options = scriptOptions('verify', items.length, true, { saturation: [60, 100], rate: [10, 25] });

const params = jsonPost('POST /v1/verify');

export default function () {
  const item = items[index(items.length)];
  const res = http.post(`${GATEWAY}/v1/verify`, item.body, params);
  check(res, {
    'status 200': (r) => r.status === 200,
    'answer as expected': (r) => r.status === 200 && r.json('status') === item.expect,
  });
}
