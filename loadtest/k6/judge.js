// POST /v1/judge with the registry's openings (and a tenth with a wrong member id, which
// must be judged incorrect). The judge verifies the signature too, so it costs about what a
// verify does. The openings are fewer than a run's requests: the scenario wraps around.

import http from 'k6/http';
import { check } from 'k6';
import { GATEWAY, fixtures, index, jsonPost, scriptOptions } from './lib.js';

const items = fixtures('judge', 'judge.json', (all) =>
  all.map((j) => ({
    body: JSON.stringify({ message: j.message, signature: j.signature, id: j.id, pi: j.pi }),
    correct: j.expect_correct,
  })),
);

export const options = scriptOptions('judge', items.length, false, { saturation: [60, 100], rate: [10, 25] });

const params = jsonPost('POST /v1/judge');

export default function () {
  const item = items[index(items.length)];
  const res = http.post(`${GATEWAY}/v1/judge`, item.body, params);
  check(res, {
    'status 200': (r) => r.status === 200,
    'judged as expected': (r) => r.status === 200 && r.json('correct') === item.correct,
  });
}
