// Shared by the scenarios: configuration from the environment, loading the fixtures, the
// request parameters, and the options (the executor for each mode and the thresholds). See loadtest/README.md.
//
//   GATEWAY      gateway base URL (default http://127.0.0.1:7400)
//   FIXTURES     directory `dgsp-loadtest generate` wrote (absolute path)
//   MODE         `saturation` (closed model: VUS virtual users as fast as answers come) or
//                `rate` (open model: RATE iterations/s for DURATION, latency at a set load)
//   VUS          saturation: virtual users (default 16)
//   DURATION     wrap-around scenarios (judge, reads) and `rate` mode: run time (default 15s)
//   RATE         rate mode: iterations per second (required)
//   P95_MS, P99_MS  override the latency thresholds of the mode

import exec from 'k6/execution';
import { SharedArray } from 'k6/data';

export const GATEWAY = (__ENV.GATEWAY || 'http://127.0.0.1:7400').replace(/\/$/, '');
export const FIXTURES = __ENV.FIXTURES || '../results/fixtures';
export const MODE = __ENV.MODE || 'saturation';
const VUS = parseInt(__ENV.VUS || '16', 10);
const DURATION = __ENV.DURATION || '15s';

// Parameters of a JSON POST whose metrics are tagged `name`.
export function jsonPost(name) {
  return { headers: { 'content-type': 'application/json' }, tags: { name } };
}

// The array in fixture file FILE (in FIXTURES) as `build` turns it into items (request
// bodies are built here, once, not per iteration), shared by every virtual user as NAME.
export function fixtures(name, file, build = (all) => all) {
  return new SharedArray(name, () => build(JSON.parse(open(`${FIXTURES}/${file}`))));
}

// A script's options: one scenario NAME over COUNT items (see `scenario`) and the
// thresholds of `bounds` (see `thresholds`).
export function scriptOptions(name, count, distinct, bounds) {
  return {
    scenarios: { [name]: scenario(count, distinct) },
    thresholds: thresholds(bounds),
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  };
}

// The executor. `distinct` items are walked once each, in order, without repeats: in
// saturation mode one shared-iterations pass over all of them; in rate mode the runner
// keeps RATE × DURATION within the count. Other scenarios (judge, reads) wrap around.
function scenario(count, distinct) {
  if (MODE === 'rate') {
    const rate = parseInt(__ENV.RATE || '0', 10);
    if (!(rate > 0)) throw new Error('MODE=rate needs RATE (iterations per second)');
    return {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: Math.max(8, Math.min(64, Math.ceil(rate / 50))),
      maxVUs: 128,
    };
  }
  if (MODE !== 'saturation') throw new Error(`MODE=${MODE}: saturation or rate`);
  if (distinct) {
    return { executor: 'shared-iterations', vus: VUS, iterations: count, maxDuration: '10m' };
  }
  return { executor: 'constant-vus', vus: VUS, duration: DURATION };
}

// Index of this iteration into an array of `count` items (wrapping when the scenario is
// longer than the array).
export function index(count) {
  return exec.scenario.iterationInTest % count;
}

// Thresholds: errors under 1%, checks over 99%, and p95/p99 latency bounds per mode,
// measured on the 2-core CI machine with headroom (see docs/benchmarks.md).
function thresholds(bounds) {
  const b = bounds[MODE];
  const p95 = __ENV.P95_MS || b[0];
  const p99 = __ENV.P99_MS || b[1];
  const t = {
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    http_req_duration: [`p(95)<${p95}`, `p(99)<${p99}`],
  };
  if (MODE === 'rate') {
    // The open model must keep up: under 1% of the scheduled iterations dropped.
    const rate = parseInt(__ENV.RATE || '0', 10);
    const secs = parseFloat(DURATION) || 15;
    t.dropped_iterations = [`count<${Math.max(1, Math.floor(rate * secs * 0.01))}`];
  }
  return t;
}
