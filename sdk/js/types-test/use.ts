import {
  TrustRoot, DgspError, DEFAULT_CLOCK_TOLERANCE_MS, firstFailure, init, type AnswerReport, type Policy,
} from '@dgsp/verifier';
await init();
// Compiled with `tsc -p types-test` (no emit): the published types accept the documented use.
const root: TrustRoot = TrustRoot.fromKeyFile('abc');
const witnessed: TrustRoot = TrustRoot.fromKeyFile('abc', { witnessPolicy: 'log x', logKeyStatement: null })
  .withWitnessPolicy(root.logLineFromStatement('statement'));
if (witnessed.hasWitnessPolicy) console.log('witnesses');
const p: Policy = { max_age_ms: 1, now_unix_ms: Date.now() };
const skewed: Policy = { ...p, clock_tolerance_ms: DEFAULT_CLOCK_TOLERANCE_MS * 2 };
if (root.checkAnswer('m', 's', {}, null, skewed).checks.some((c) => c.check === 'future_checkpoint')) console.log('ahead');
const r: AnswerReport = root.checkAnswer(new Uint8Array(), 'sig', {}, null, p);
const f = firstFailure(r);
if (f) console.log(f.check.toUpperCase(), r.gateway_status, r.witnesses_checked);
try { root.verifySignature('m', 's'); } catch (e) { if (e instanceof DgspError) console.log(e.kind); }
