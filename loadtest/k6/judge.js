// POST /v1/judge with the registry's openings (and a tenth with a wrong member id, which
// must be judged incorrect). The judge verifies the signature too, so it costs about what a
// verify does. The openings are fewer than a run's requests: the scenario wraps around.

import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import { FIXTURES, GATEWAY, JSON_POST, index, scenario, thresholds } from './lib.js';

const items = new SharedArray('judge', () =>
  JSON.parse(open(`${FIXTURES}/judge.json`)).map((j) => ({
    body: JSON.stringify({ message: j.message, signature: j.signature, id: j.id, pi: j.pi }),
    correct: j.expect_correct,
  })),
);

export const options = {
  scenarios: { judge: scenario(items.length, false) },
  thresholds: thresholds({ saturation: [60, 100], rate: [10, 25] }),
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
};

const params = Object.assign({ tags: { name: 'POST /v1/judge' } }, JSON_POST);

export default function () {
  const item = items[index(items.length)];
  const res = http.post(`${GATEWAY}/v1/judge`, item.body, params);
  check(res, {
    'status 200': (r) => r.status === 200,
    'judged as expected': (r) => r.status === 200 && r.json('correct') === item.correct,
  });
}
