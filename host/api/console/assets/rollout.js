// A plan and its rollouts, live: the plan's deployments, one deployment's rollout (the newest,
// or the one chosen at #/plans/{plan}/deployments/{id}: step, weights, waiting_for,
// progress) with its history, its instances by version and health, and the rollout
// controls (docs/architecture.md#rollouts), each greyed out, with the reason as its title,
// while the deployment's state does not allow it. Reads GET /v1/plans/{name}, the same view
// `tide deployment show` and `tide deployment watch` read; app.js draws it again on every
// batch of events.

import { getJson } from "./api.js";
import { badge, el, fields, link, table, when } from "./dom.js";
import { eventRows, kEventHeaders } from "./events.js";

const kOverStates = ["COMPLETED", "FAILED", "CANCELLED", "ROLLED_BACK"];
const kInFlightStates = ["PENDING", "IN_PROGRESS", "PAUSED"];
// The newest events of a deployment its history shows.
const kHistoryEvents = 100;

// The controls an operator may give a rollout, as [label, verb, body, what it does].
const kControls = [
  ["Promote", "promote", {}, "move past the current pause, inconclusive analysis or step"],
  ["Promote full", "promote", { full: true }, "skip the remaining steps, pauses and analyses"],
  ["Pause", "pause", {}, "hold the rollout: its strategy is not called until resumed"],
  ["Resume", "resume", {}, "lift the hold: the strategy decides again"],
  ["Abort", "abort", {}, "end it FAILED and bring back the last completed deployment"],
  ["Rollback", "rollback", {}, "end it ROLLED_BACK and bring back the last completed deployment"],
  ["Retry", "retry", {}, "roll it out again from its first step"],
];

// The newest deployment before `deployment` that a rollback or abort would bring back, as
// Ledger::restoreDeployment chooses it: it completed and was not rolled back since.
function restoreTargetOf(deployment, deployments) {
  return deployments
    .filter((d) => d.metadata.id < deployment.metadata.id && d.completed_at && d.state !== "ROLLED_BACK"
      && (d.state === "COMPLETED" || kInFlightStates.includes(d.state)))
    .reduce((newest, d) => (!newest || d.metadata.id > newest.metadata.id ? d : newest), null);
}

// Why the server would refuse `verb` on `deployment` now, in its words where it has them
// (Ledger::controlDeployment, docs/api.md "Rollout controls"), or "" when it would take it.
// Stricter than the server in two places where the control would change nothing: pausing a
// rollout a person already holds, and resuming one only its strategy paused (the strategy
// pauses it again at once; promote moves it on).
function refusalOf(verb, deployment, deployments) {
  const state = deployment.state;
  const id = deployment.deployment_id;
  const is = `deployment '${id}' is ${state}`;
  const inFlight = kInFlightStates.includes(state);
  const hold = deployment.signals?.hold;
  switch (verb) {
    case "promote":
      return inFlight ? "" : `${is}; only a rollout in progress can be promoted`;
    case "pause":
      if (state !== "IN_PROGRESS" && state !== "PAUSED") return `${is}; only a rollout in progress can be paused`;
      return hold ? `paused by ${hold.by} already` : "";
    case "resume":
      if (!inFlight) return `${is}; only a paused rollout can be resumed`;
      if (hold) return "";
      return state === "PAUSED" ? "paused by its strategy, not by a person: promote moves it on"
        : `${is}; it is not paused`;
    case "abort":
      return inFlight ? "" : `${is}; only a rollout in progress can be aborted`;
    case "rollback":
      if (["ROLLED_BACK", "CANCELLED", "PENDING"].includes(state)) {
        return `${is}; only a rollout in progress, completed or failed can be rolled back`;
      }
      return restoreTargetOf(deployment, deployments) ? ""
        : `deployment '${id}' has nothing to roll back to: no earlier deployment completed`;
    case "retry": {
      if (state !== "FAILED") return `${is}; only a FAILED (aborted) rollout can be retried`;
      const newer = deployments.find((d) => d.metadata.id > deployment.metadata.id);
      return newer ? `deployment '${id}' has been followed by '${newer.deployment_id}'; only the newest deployment `
        + "can be retried" : "";
    }
    default:
      return "";
  }
}

function newestOf(deployments) {
  return deployments.reduce((newest, d) => (!newest || d.metadata.id > newest.metadata.id ? d : newest), null);
}

function imageOf(deployment) {
  return (deployment.payload_coordinates ?? [])
    .map((payload) => Object.values(payload.coordinates ?? {}).join(" "))
    .join(", ");
}

function stepsOf(rollout) {
  return Array.isArray(rollout.steps) ? rollout.steps.length : rollout.steps;
}

function weightsText(weights) {
  if (!weights || typeof weights !== "object") return "";
  return Object.entries(weights).map(([version, weight]) => `${version} ${weight}`).join(" / ");
}

// How far the rollout has come through its steps: the step it is at (all of them once over).
function progressOf(rollout, over) {
  const steps = stepsOf(rollout);
  if (!Number.isInteger(rollout.step) || !Number.isInteger(steps) || steps < 1) return null;
  const reached = over ? steps : Math.min(rollout.step, steps);
  return el("span", { class: "progress" },
    el("progress", { max: steps, value: reached, "data-field": "progress" }),
    ` ${Math.round((100 * reached) / steps)}%`);
}

function controlsOf(ctx, plan, deployment, deployments) {
  const reason = el("input", { type: "text", id: "control-reason", placeholder: "reason (optional)" });
  const path = `/v1/plans/${encodeURIComponent(plan.name)}/deployments/${encodeURIComponent(deployment.deployment_id)}`;
  return el("div", { class: "controls" },
    kControls.map(([label, verb, body, does]) => {
      const refusal = refusalOf(verb, deployment, deployments);
      return el("button", {
        type: "button",
        "data-control": label.toLowerCase().replace(" ", "-"),
        disabled: refusal !== "",
        title: refusal || does,
        onclick: () => ctx.post(`${label} ${deployment.deployment_id}`, `${path}/${verb}`,
          reason.value ? { ...body, reason: reason.value } : body),
      }, label);
    }),
    reason);
}

function rolloutSection(ctx, plan, deployment, deployments) {
  const rollout = deployment.rollout_state ?? {};
  const over = kOverStates.includes(deployment.state);
  const steps = stepsOf(rollout);
  const step = Number.isInteger(rollout.step) ? `${rollout.step}${Number.isInteger(steps) ? ` of ${steps}` : ""}` : "";
  const pending = Object.keys(deployment.signals ?? {}).filter((s) => !["hold", "restore", "hook_hold"].includes(s));
  const section = el("section", { id: "rollout", "data-deployment": deployment.deployment_id },
    el("h2", {}, `Rollout of ${deployment.deployment_id} `, badge(deployment.state)),
    fields([
      ["State", deployment.state, "state"],
      ["Message", deployment.message, "message"],
      ["Strategy", deployment.strategy?.script || plan.strategy?.script || "rolling", "strategy"],
      ["Step", step, "step"],
      ["Progress", progressOf(rollout, over), "progress-text"],
      ["Weights", weightsText(rollout.weights), "weights"],
      ["Waiting for", over ? "" : rollout.waiting_for, "waiting_for"],
      ["Pending signals", pending.join(", "), "signals"],
      ["Started", when(deployment.started_at), "started_at"],
      ["Paused since", when(deployment.paused_since), "paused_since"],
      ["Completed", when(deployment.completed_at), "completed_at"],
      ["Added by", deployment.added_by, "added_by"],
    ]));
  if (ctx.can("operator")) section.append(controlsOf(ctx, plan, deployment, deployments));
  return section;
}

// What the history has read of each deployment's events, by subject: the newest
// kHistoryEvents of them, how many there were, and the seq of the last. The API pages
// forward from a seq, so a redraw (one per batch of events) asks only for what came after.
const historyRead = new Map();

async function deploymentEvents(subject) {
  const read = historyRead.get(subject) ?? { events: [], total: 0, after: 0 };
  historyRead.set(subject, read);
  for (;;) {
    const page = await getJson(`/v1/events?subject=${encodeURIComponent(subject)}&limit=1000&after=${read.after}`);
    // Two redraws may read the same page at once: keep each event once.
    const fresh = page.items.filter((e) => e.seq > read.after);
    if (fresh.length > 0) {
      read.events = read.events.concat(fresh).slice(-kHistoryEvents);
      read.total += fresh.length;
      read.after = fresh[fresh.length - 1].seq;
    }
    if (!page.next_after) return read;
  }
}

// The deployment's own events (subject deployment/{plan}/{id}: created, state, message,
// controls, routes), newest first; the newest kHistoryEvents of them.
async function historySection(plan, deployment) {
  const read = await deploymentEvents(`deployment/${plan.name}/${deployment.deployment_id}`);
  const history = table(kEventHeaders, eventRows(read.events), "no events");
  history.id = "history";
  return el("section", {},
    el("h2", {}, `History of ${deployment.deployment_id}`),
    read.total > read.events.length
      ? el("p", {}, `The newest ${read.events.length} of ${read.total} events; `,
        link(`#/events`, "Events"), " has them all.")
      : null,
    history);
}

// Instances by version: the view's counts for each deployment that has instances.
function versionsSection(view) {
  const byDeployment = view.instance_summary?.by_deployment ?? {};
  const images = Object.fromEntries(view.deployments.map((d) => [d.deployment_id, imageOf(d)]));
  const rows = Object.entries(byDeployment).map(([id, counts]) => [
    id, images[id] ?? "", String(counts.total), String(counts.running), String(counts.ready),
    String(counts.pending), String(counts.failed),
  ]);
  return el("section", { id: "versions" },
    el("h2", {}, "Instances by version"),
    table(["Deployment", "Image", "Total", "Running", "Ready", "Pending", "Failed"], rows, "no instances"));
}

function instanceRow(entry) {
  const meta = entry.meta_instance;
  const runtime = (entry.runtime_instances ?? []).find((r) => r.is_active) ?? entry.runtime_instances?.[0];
  const operation = (entry.operations ?? [])[0];
  const health = !runtime ? "" : runtime.health?.healthy ? "healthy" : "not healthy";
  const row = [
    link(`#/instances/${encodeURIComponent(meta.name)}`, meta.name),
    meta.deployment_id,
    badge(meta.state),
    runtime ? badge(runtime.state) : "",
    health,
    runtime?.node ?? "",
    operation ? `#${operation.metadata.id} ${operation.type} ${operation.state}` : "",
  ];
  return row;
}

function deploymentRow(plan, deployment, shown) {
  const href = `#/plans/${encodeURIComponent(plan.name)}/deployments/${encodeURIComponent(deployment.deployment_id)}`;
  return [deployment === shown ? el("strong", {}, deployment.deployment_id) : link(href, deployment.deployment_id),
    badge(deployment.state), imageOf(deployment), String(deployment.instance_count), deployment.added_by,
    when(deployment.started_at), when(deployment.completed_at)];
}

// `deploymentId`: the deployment whose rollout to show; the newest when none is named.
export async function planPage(ctx, name, deploymentId = undefined) {
  const view = await getJson(`/v1/plans/${encodeURIComponent(name)}?limit=1000`);
  const plan = view.plan;
  const newest = newestOf(view.deployments);
  const shown = deploymentId === undefined ? newest : view.deployments.find((d) => d.deployment_id === deploymentId);
  if (!shown && deploymentId !== undefined) {
    return el("p", { class: "error" }, `Plan ${plan.name} has no deployment '${deploymentId}'.`);
  }
  const instances = table(["Instance", "Deployment", "State", "Runtime", "Health", "Node", "Newest operation"],
    view.instances.map(instanceRow), "no instances");
  instances.id = "instances";
  const deployments = table(["Deployment", "State", "Image", "Count", "Added by", "Started", "Completed"],
    [...view.deployments].reverse().map((d) => deploymentRow(plan, d, shown)));
  deployments.id = "deployments";
  return el("div", {},
    el("h1", {}, `Plan ${plan.name} `, badge(plan.state)),
    fields([["Namespace", plan.namespace, "namespace"], ["Service", plan.service_name, "service"],
      ["Strategy", plan.strategy?.script || "rolling", "plan-strategy"]]),
    shown !== newest ? el("p", { id: "older-deployment" }, `An earlier deployment; the newest is `,
      link(`#/plans/${encodeURIComponent(plan.name)}`, newest.deployment_id), ".") : null,
    shown ? rolloutSection(ctx, plan, shown, view.deployments) : el("p", {}, "No deployments yet."),
    versionsSection(view),
    el("section", {}, el("h2", {}, "Instances"), instances),
    el("section", {}, el("h2", {}, "Deployments (choose one to see its rollout)"), deployments),
    shown ? await historySection(plan, shown) : null);
}
