// Public reads: GET /v1/revocations/{zeta}/proof for revoked, valid and never-issued zetas
// (nine in ten requests; the proof's kind must match), and GET /v1/revocations/snapshot
// (one in ten). No cryptography on the gateway's side, only the Merkle proof: this measures
// the HTTP path and the revocation set. Wraps around the zetas.

import http from 'k6/http';
import { check } from 'k6';
import { GATEWAY, fixtures, index, scriptOptions } from './lib.js';

const zetas = fixtures('zetas', 'zetas.json');

export const options = scriptOptions('reads', zetas.length, false, { saturation: [30, 60], rate: [20, 40] });

const proofTag = { tags: { name: 'GET /v1/revocations/{zeta}/proof' } };
const snapTag = { tags: { name: 'GET /v1/revocations/snapshot' } };

export default function () {
  const i = index(zetas.length);
  if (i % 10 === 0) {
    const res = http.get(`${GATEWAY}/v1/revocations/snapshot`, snapTag);
    check(res, {
      'status 200': (r) => r.status === 200,
      'a signed snapshot': (r) => r.status === 200 && typeof r.json('encoded') === 'string',
    });
    return;
  }
  const z = zetas[i];
  const res = http.get(`${GATEWAY}/v1/revocations/${z.zeta}/proof`, proofTag);
  const kind = z.revoked ? 'inclusion' : 'non_membership';
  check(res, {
    'status 200': (r) => r.status === 200,
    'proof as expected': (r) =>
      r.status === 200 && r.json('revoked') === z.revoked && r.json('proof.kind') === kind,
  });
}
