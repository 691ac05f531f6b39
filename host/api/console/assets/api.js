// The console's calls to the tide API: the token lives in this tab's sessionStorage and
// goes out as `Authorization: Bearer`, never in a cookie, so no other site can make the
// browser act with it (no CSRF). Errors come back as ApiError carrying the server's own
// message, which the console shows as it is.

const kTokenKey = "tide.token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function savedToken() {
  return sessionStorage.getItem(kTokenKey);
}

export function saveToken(token) {
  sessionStorage.setItem(kTokenKey, token);
}

export function forgetToken() {
  sessionStorage.removeItem(kTokenKey);
}

async function call(method, path, body, signal) {
  const headers = { Authorization: `Bearer ${savedToken() ?? ""}` };
  const init = { method, headers, cache: "no-store", signal };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, "unreachable", `the host did not answer: ${error.message}`);
  }
  if (response.ok) return response;
  let code = "error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const envelope = await response.json();
    code = envelope.error?.code ?? code;
    message = envelope.error?.message ?? message;
  } catch {
    // Not the error envelope (a proxy's page): the status line says what there is to say.
  }
  throw new ApiError(response.status, code, message);
}

// `signal` (an AbortSignal) ends the request early.
export async function getJson(path, signal = undefined) {
  return (await call("GET", path, undefined, signal)).json();
}

export async function getText(path) {
  return (await call("GET", path)).text();
}

export async function postJson(path, body = {}) {
  return (await call("POST", path, body)).json();
}

// Every item of a paged list (`items`, `next_after`), up to `most`.
export async function listAll(path, most = 5000) {
  const items = [];
  const separator = path.includes("?") ? "&" : "?";
  let after = 0;
  while (items.length < most) {
    const page = await getJson(`${path}${separator}limit=1000&after=${after}`);
    items.push(...page.items);
    if (!page.next_after) break;
    after = page.next_after;
  }
  return items;
}

// The role ladder of docs/api.md: each role may do what the ones before it may.
const kRoles = ["viewer", "operator", "approver", "admin"];

export function roleAllows(held, needed) {
  return kRoles.indexOf(held) >= kRoles.indexOf(needed) && kRoles.includes(held);
}

// Follows the event log from `after` with long polls (GET /v1/events?wait=), calling
// `onEvents(events)` for each batch, until `signal` aborts (signing out), which also ends
// the poll in flight: a waiting poll holds one of the host's few wait slots. A failed poll
// is retried after `retryMs`, so a restarting host is picked up again.
export async function followEvents(after, signal, onEvents, retryMs = 2000) {
  let cursor = after;
  while (!signal.aborted) {
    try {
      const page = await getJson(`/v1/events?after=${cursor}&limit=1000&wait=25`, signal);
      if (page.items.length > 0) {
        cursor = page.items[page.items.length - 1].seq;
        onEvents(page.items);
      }
    } catch {
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}
