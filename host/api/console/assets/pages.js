// The console's pages other than a plan's (rollout.js): each is an async function of the
// console context (app.js) and the route's parameters that returns the page's node. They
// read the API afresh every time: app.js draws the shown page again on every batch of
// events, so what they show follows the ledger.

import { getJson, getText, listAll } from "./api.js";
import { badge, el, fields, link, table, when } from "./dom.js";
import { eventRows, kEventHeaders } from "./events.js";

// The newest events the Audit page shows.
const kAuditEvents = 50;

function resources(r) {
  return r ? `${r.cores} cores, ${r.memory_gib} GiB` : "";
}

function capacity(node) {
  const usable = node.total.cores - node.system_reserved.cores;
  const used = usable - node.remaining.cores;
  return el("span", { class: "progress" },
    el("progress", { max: usable > 0 ? usable : 1, value: Math.max(0, used) }),
    ` ${resources(node.remaining)} free of ${resources(node.total)}`);
}

function agentText(agent) {
  if (!agent) return "";
  const seen = agent.heartbeat_age_s === null ? "never heard from" : `heard ${Math.round(agent.heartbeat_age_s)}s ago`;
  return `${agent.reachable ? "reachable" : "UNREACHABLE"}, ${seen}${agent.version ? `, ${agent.version}` : ""}`;
}

export async function fleetPage() {
  const nodes = await listAll("/v1/nodes");
  const halt = await getJson("/v1/control");
  return el("div", {},
    el("h1", {}, "Fleet"),
    halt.halted ? el("p", { class: "alarm" }, `The control loop is halted: ${halt.halt.reason}`) : null,
    halt.partition ? el("p", { class: "alarm" }, `Partition: ${halt.partition.message}`) : null,
    table(["Node", "Cluster", "Update domain", "State", "Capacity", "Agent", "Message"],
      nodes.map((n) => [n.name, n.cluster, n.update_domain, badge(n.state), capacity(n), agentText(n.agent),
        n.message])));
}

export async function plansPage() {
  const plans = await listAll("/v1/plans");
  return el("div", {},
    el("h1", {}, "Plans"),
    table(["Plan", "Namespace", "Strategy", "State", "Message"],
      plans.map((p) => [link(`#/plans/${encodeURIComponent(p.name)}`, p.name), p.namespace,
        p.strategy?.script || "rolling", badge(p.state), p.message])));
}

function decisionItem(decision) {
  const reasons = (decision.reasons ?? []).join("; ");
  return el("li", { class: "decision" },
    el("strong", {}, decision.policy), ` ${decision.verdict}`,
    reasons ? `: ${reasons}` : "",
    decision.error_class ? ` (${decision.error_class})` : "");
}

// N-of-M progress where the host counts approvals (an operation's `approvals`: required,
// counted, still_needed, summary): "1 of 2 approvals (alice); 1 more needed"; "" where it
// does not.
function approvalsText(approvals) {
  if (!approvals || typeof approvals !== "object") return "";
  const counted = approvals.counted ?? [];
  const summary = approvals.summary || `${counted.length} of ${approvals.required}`;
  return approvals.still_needed > 0 ? `${summary}; ${approvals.still_needed} more needed` : summary;
}

// Who may count towards the approvals a policy asked for (decision.approvals: required,
// role, distinct_from); "" when any one approver will do.
function requirementText(requirement) {
  if (!requirement || typeof requirement !== "object") return "";
  const parts = [];
  if (requirement.required > 1) parts.push(`${requirement.required} people`);
  if (requirement.role) parts.push(`holding the ${requirement.role} role or above`);
  const others = (requirement.distinct_from ?? []).map((name) => (name === "requester" ? "the requester" : name));
  if (others.length > 0) parts.push(`other than ${others.join(", ")}`);
  return parts.join(", ");
}

// Approve and reject, or, for an operation only soft policies denied (decision.overridable),
// override and reject: the API takes nothing but an override with a reason then. Approving
// twice is greyed out; the four-eyes rule is left to the server, which says why it refuses.
function decisionControls(ctx, operation) {
  const id = operation.metadata.id;
  const path = `/v1/operations/${id}`;
  const overridable = operation.decision?.overridable === true;
  const reason = el("input", { type: "text", "data-field": "reason",
    placeholder: overridable ? "reason (required to override)" : "reason (optional)" });
  const body = () => (reason.value ? { reason: reason.value } : {});
  const mine = (operation.decision?.approvals?.given ?? []).find((g) => g.actor === ctx.session.name);
  const already = mine ? `${mine.actor} approved it already` : "";
  const approve = overridable
    ? el("button", { type: "button", "data-control": "override", disabled: Boolean(mine),
      title: already || "approve despite the soft deny; the reason is recorded with the override",
      onclick: () => {
        if (!reason.value.trim()) {
          ctx.notice(`Override operation ${id}: give a reason; it is recorded with the override.`, "error");
          reason.focus();
          return;
        }
        ctx.post(`Override operation ${id}`, `${path}/approve`, { override: true, reason: reason.value.trim() });
      } }, "Override")
    : el("button", { type: "button", "data-control": "approve", disabled: Boolean(mine), title: already || null,
      onclick: () => ctx.post(`Approve operation ${id}`, `${path}/approve`, body()) }, "Approve");
  return el("div", { class: "controls" }, approve,
    el("button", { type: "button", "data-control": "reject",
      onclick: () => ctx.post(`Reject operation ${id}`, `${path}/reject`, body()) }, "Reject"),
    reason);
}

function operationCard(ctx, operation) {
  const id = operation.metadata.id;
  const decisions = operation.decisions ?? [];
  return el("article", { class: "operation", "data-operation": id },
    el("h2", {}, `#${id} ${operation.type} `, link(`#/instances/${encodeURIComponent(operation.meta_instance)}`,
      operation.meta_instance), " of ", link(`#/plans/${encodeURIComponent(operation.plan)}`, operation.plan)),
    operation.decision?.overridable === true
      ? el("p", { class: "alarm", "data-field": "soft-deny" },
        "Denied by a soft policy: an approver may override the deny, giving a reason.")
      : null,
    fields([
      ["Requested by", operation.requested_by, "requested_by"],
      ["Intent", operation.intent, "intent"],
      ["Approvals", approvalsText(operation.approvals), "approvals"],
      ["Needs", requirementText(operation.decision?.approvals), "requirement"],
      ["Message", operation.message, "message"],
      ["Waiting since", when(operation.metadata.updated_at), "since"],
    ]),
    el("h3", {}, "Policy decisions"),
    decisions.length > 0 ? el("ul", {}, decisions.map(decisionItem))
      : el("p", { class: "empty" }, "No policy decided: a person decides."),
    ctx.can("approver") ? decisionControls(ctx, operation) : null);
}

export async function approvalsPage(ctx) {
  const waiting = await listAll("/v1/operations?state=PENDING_APPROVAL", 200);
  const operations = await Promise.all(waiting.map((op) => getJson(`/v1/operations/${op.metadata.id}`)));
  return el("div", {},
    el("h1", {}, `Approvals (${operations.length} waiting)`),
    ctx.can("approver") ? null : el("p", {}, `${ctx.session.role} may look; approving needs the approver role.`),
    operations.length > 0 ? operations.map((op) => operationCard(ctx, op))
      : el("p", { class: "empty", id: "no-approvals" }, "Nothing waits for a decision."));
}

export async function auditPage() {
  const report = await getJson("/v1/audit/verify");
  const pairs = Object.entries(report).map(([key, value]) =>
    [key, typeof value === "object" ? JSON.stringify(value) : String(value), key]);
  const last = (await getJson("/v1/whoami")).last_event_seq;
  const page = await getJson(`/v1/events?after=${Math.max(0, last - kAuditEvents)}&limit=1000`);
  return el("div", {},
    el("h1", {}, "Audit"),
    el("p", {}, report.ok ? "The event chain verifies." : "The event chain does NOT verify."),
    fields(pairs),
    el("h2", {}, "Who did what, newest first"),
    table(kEventHeaders, eventRows(page.items), "no events"));
}

export async function scriptsPage() {
  const scripts = (await getJson("/v1/scripts")).items;
  return el("div", {},
    el("h1", {}, "Scripts"),
    table(["Path", "Kind", "Status", "Loaded", "Active sha256", "Last error"],
      scripts.map((s) => [s.path, s.kind, badge(s.status), when(s.loaded_at), String(s.active_sha256 ?? "").slice(0, 12),
        s.last_error ? el("pre", { class: "error" },
          `${s.last_error_class ? `${s.last_error_class}: ` : ""}${s.last_error} (${when(s.last_attempt_at)})`) : ""])));
}

export async function instancePage(ctx, name) {
  const view = await getJson(`/v1/instances/${encodeURIComponent(name)}`);
  const meta = view.meta_instance;
  let logs;
  try {
    logs = await getText(`/v1/instances/${encodeURIComponent(name)}/logs?tail_bytes=65536`);
  } catch (error) {
    logs = `(no log: ${error.message})`;
  }
  return el("div", {},
    el("h1", {}, `Instance ${meta.name} `, badge(meta.state)),
    fields([["Plan", link(`#/plans/${encodeURIComponent(meta.plan)}`, meta.plan), "plan"],
      ["Deployment", meta.deployment_id, "deployment"], ["Message", meta.message, "message"]]),
    el("h2", {}, "Runtime instances"),
    table(["Node", "State", "Active", "Healthy", "Ports", "Message"],
      (view.runtime_instances ?? []).map((r) => [r.node, badge(r.state), r.is_active ? "yes" : "no",
        r.health?.healthy ? "yes" : "no", JSON.stringify(r.ports), r.message])),
    el("h2", {}, "Operations"),
    table(["Id", "Type", "State", "Requested by", "Approved by", "Message"],
      (view.operations ?? []).map((o) => [String(o.metadata.id), o.type, badge(o.state), o.requested_by,
        o.approved_by, o.message])),
    el("h2", {}, "Log (tail)"),
    el("pre", { class: "log", id: "log" }, logs));
}
