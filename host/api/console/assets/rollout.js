// A plan and its rollout, live: the plan's deployments, the newest one's rollout (step,
// weights, waiting_for, progress), its instances by version and health, and the rollout
// controls (docs/architecture.md#rollouts). Reads GET /v1/plans/{name}, the same view
// `tide deployment show` and `tide deployment watch` read; app.js draws it again on every
// batch of events.

import { getJson } from "./api.js";
import { badge, el, fields, link, table, when } from "./dom.js";

const kOverStates = ["COMPLETED", "FAILED", "CANCELLED", "ROLLED_BACK"];

// The controls an operator may give a rollout in progress, as [label, verb, body].
const kControls = [
  ["Promote", "promote", {}],
  ["Promote full", "promote", { full: true }],
  ["Pause", "pause", {}],
  ["Resume", "resume", {}],
  ["Abort", "abort", {}],
  ["Rollback", "rollback", {}],
  ["Retry", "retry", {}],
];

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

function rolloutSection(ctx, plan, deployment) {
  const rollout = deployment.rollout_state ?? {};
  const over = kOverStates.includes(deployment.state);
  const steps = stepsOf(rollout);
  const step = Number.isInteger(rollout.step) ? `${rollout.step}${Number.isInteger(steps) ? ` of ${steps}` : ""}` : "";
  const pending = Object.keys(deployment.signals ?? {}).filter((s) => s !== "hold" && s !== "restore");
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
  if (!over && ctx.can("operator")) {
    const reason = el("input", { type: "text", id: "control-reason", placeholder: "reason (optional)" });
    const path = `/v1/plans/${encodeURIComponent(plan.name)}/deployments/${encodeURIComponent(deployment.deployment_id)}`;
    section.append(el("div", { class: "controls" },
      kControls.map(([label, verb, body]) => el("button", {
        type: "button",
        "data-control": label.toLowerCase().replace(" ", "-"),
        onclick: () => ctx.post(`${label} ${deployment.deployment_id}`, `${path}/${verb}`,
          reason.value ? { ...body, reason: reason.value } : body),
      }, label)),
      reason));
  }
  return section;
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

function deploymentRow(deployment) {
  return [deployment.deployment_id, badge(deployment.state), imageOf(deployment), String(deployment.instance_count),
    deployment.added_by, when(deployment.started_at), when(deployment.completed_at)];
}

export async function planPage(ctx, name) {
  const view = await getJson(`/v1/plans/${encodeURIComponent(name)}?limit=1000`);
  const plan = view.plan;
  const newest = newestOf(view.deployments);
  const instances = table(["Instance", "Deployment", "State", "Runtime", "Health", "Node", "Newest operation"],
    view.instances.map(instanceRow), "no instances");
  instances.id = "instances";
  return el("div", {},
    el("h1", {}, `Plan ${plan.name} `, badge(plan.state)),
    fields([["Namespace", plan.namespace, "namespace"], ["Service", plan.service_name, "service"],
      ["Strategy", plan.strategy?.script || "rolling", "plan-strategy"]]),
    newest ? rolloutSection(ctx, plan, newest) : el("p", {}, "No deployments yet."),
    versionsSection(view),
    el("section", {}, el("h2", {}, "Instances"), instances),
    el("section", {}, el("h2", {}, "Deployments"),
      table(["Deployment", "State", "Image", "Count", "Added by", "Started", "Completed"],
        [...view.deployments].reverse().map(deploymentRow))));
}
