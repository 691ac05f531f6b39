// The Cedar side of tests/bench/policy_bench.cpp: decides the bench's requests with the
// Cedar policies of policies.cedar through Cedar's official WebAssembly build, checks each
// answer against the one tide gave, and prints one JSON line of figures.
//
//   node bench.js <.../@cedar-policy/cedar-wasm/nodejs/cedar_wasm.js> <policies.cedar> <requests.json>
//
// requests.json: {decisions, rounds, warmup, requests: [{type, plan, namespace, requested_by, epoch,
// weekday, hour, update_domain, in_flight_in_domain, expected: {outcome, voters}}]}.
//
// The policy set is parsed once. Two entry points are measured: statefulIsAuthorized over a
// policy set preparsed with preparsePolicySet (no parsing per call), and isAuthorized, which
// takes the policies with every call. Each runs `rounds` rounds of `decisions` after a
// warm-up; the best round of the faster one is reported. Entities and contexts are built
// before timing; a decision is one call plus reading the outcome from its answer.
'use strict';

const fs = require('fs');

const [modulePath, policiesPath, requestsPath] = process.argv.slice(2);
if (!requestsPath) {
  console.error('usage: node bench.js <cedar_wasm.js> <policies.cedar> <requests.json>');
  process.exit(2);
}
const cedar = require(modulePath);
const input = JSON.parse(fs.readFileSync(requestsPath, 'utf8'));

// The policy set as {id: text}, and each id's tide policy and verdict (its annotations).
function loadPolicies(text) {
  const parts = cedar.policySetTextToParts(text);
  if (parts.type !== 'success') throw new Error('policies.cedar: ' + JSON.stringify(parts.errors));
  const policies = {};
  const meta = {};
  for (const policy of parts.policies) {
    const annotation = (name) => {
      const m = new RegExp('@' + name + '\\("([^"]*)"\\)').exec(policy);
      if (!m) throw new Error('a policy without @' + name + ': ' + policy);
      return m[1];
    };
    const id = annotation('id');
    policies[id] = policy;
    meta[id] = { policy: annotation('policy'), verdict: annotation('verdict') };
  }
  return { policies, meta };
}

const { policies, meta } = loadPolicies(fs.readFileSync(policiesPath, 'utf8'));
const policySet = { staticPolicies: policies };
const preparsed = cedar.preparsePolicySet('tide', policySet);
if (preparsed.type !== 'success') throw new Error('preparsePolicySet: ' + JSON.stringify(preparsed.errors));

function requestOf(r) {
  return {
    principal: { type: 'Tide::Requester', id: r.requested_by },
    action: { type: 'Tide::Action', id: r.type },
    resource: { type: 'Tide::Plan', id: r.plan },
    context: {
      epoch: r.epoch,
      weekday: r.weekday,
      hour: r.hour,
      update_domain: r.update_domain,
      in_flight_in_domain: r.in_flight_in_domain,
    },
    entities: [{ uid: { type: 'Tide::Plan', id: r.plan }, attrs: { namespace: r.namespace }, parents: [] }],
  };
}
const stateful = input.requests.map((r) => ({ ...requestOf(r), preparsedPolicySetId: 'tide' }));
const stateless = input.requests.map((r) => ({ ...requestOf(r), policies: policySet }));

// tide's combination rule over Cedar's answer (policies.cedar explains the mapping).
function outcomeOf(answer) {
  if (answer.type !== 'success') throw new Error('cedar: ' + JSON.stringify(answer.errors));
  const response = answer.response;
  if (response.diagnostics.errors.length) throw new Error('cedar: ' + JSON.stringify(response.diagnostics.errors));
  if (response.decision === 'allow') return 'APPROVED';
  for (const id of response.diagnostics.reason) {
    if (meta[id].verdict === 'deny') return 'REJECTED';
  }
  return 'PENDING_APPROVAL';
}

function votersOf(answer) {
  const names = new Set(answer.response.diagnostics.reason.map((id) => meta[id].policy));
  return [...names].sort();
}

function measure(decide, calls, count, warmup) {
  for (let i = 0; i < warmup; ++i) outcomeOf(decide(calls[i % calls.length]));
  const latencies = new Float64Array(count);
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; ++i) {
    const t0 = process.hrtime.bigint();
    outcomeOf(decide(calls[i % calls.length]));
    latencies[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort();
  const at = (q) => latencies[Math.floor(q * (count - 1))];
  return {
    decisions: count,
    decisions_per_s: Number((count / seconds).toFixed(1)),
    p50_us: Number(at(0.5).toFixed(2)),
    p99_us: Number(at(0.99).toFixed(2)),
  };
}

// Does Cedar decide what tide decided, for the same reasons?
let agree = 0;
const disagreements = [];
input.requests.forEach((r, i) => {
  const answer = cedar.statefulIsAuthorized(stateful[i]);
  const got = { outcome: outcomeOf(answer), voters: votersOf(answer) };
  if (got.outcome === r.expected.outcome && JSON.stringify(got.voters) === JSON.stringify(r.expected.voters)) {
    ++agree;
  } else if (disagreements.length < 5) {
    disagreements.push({ request: r, cedar: got });
  }
});

// The best of `rounds` rounds, as policy_bench reports tide's.
function bestOf(rounds, decide, calls, count, warmup) {
  let best = null;
  for (let round = 0; round < rounds; ++round) {
    const figures = measure(decide, calls, count, round === 0 ? warmup : 0);
    if (!best || figures.decisions_per_s > best.decisions_per_s) best = figures;
  }
  return best;
}

const { decisions, warmup } = input;
const rounds = input.rounds || 1;
const prepared = bestOf(rounds, cedar.statefulIsAuthorized, stateful, decisions, warmup);
// Parsing the policies on every call is much slower; fewer calls give its figure.
const plain = bestOf(rounds, cedar.isAuthorized, stateless, Math.min(decisions, 10000), Math.min(warmup, 1000));
const best = plain.decisions_per_s > prepared.decisions_per_s ? plain : prepared;

console.log(
  JSON.stringify({
    cedar_version: cedar.getCedarVersion(),
    entry_point: best === prepared ? 'statefulIsAuthorized' : 'isAuthorized',
    decisions: best.decisions,
    decisions_per_s: best.decisions_per_s,
    p50_us: best.p50_us,
    p99_us: best.p99_us,
    stateful_is_authorized: prepared,
    is_authorized: plain,
    checked: input.requests.length,
    agree,
    disagreements,
  }),
);
