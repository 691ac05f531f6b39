// The console's shell: signing in and out, the route after '#', the notice line, and the
// live update (every batch of events draws the shown page again). Pages are in pages.js
// and rollout.js; all data comes from the API under /v1 with the token of this tab.

import { ApiError, followEvents, forgetToken, getJson, postJson, roleAllows, savedToken, saveToken } from "./api.js";
import { el } from "./dom.js";
import { eventsPage } from "./events.js";
import { approvalsPage, auditPage, fleetPage, instancePage, plansPage, scriptsPage } from "./pages.js";
import { planPage } from "./rollout.js";

const kRoutes = [
  [/^#\/fleet$/, fleetPage],
  [/^#\/plans$/, plansPage],
  [/^#\/plans\/([^/]+)$/, planPage],
  [/^#\/plans\/([^/]+)\/deployments\/([^/]+)$/, planPage],
  [/^#\/approvals$/, approvalsPage],
  [/^#\/events$/, eventsPage],
  [/^#\/events\/([^/]+)$/, eventsPage],
  [/^#\/audit$/, auditPage],
  [/^#\/scripts$/, scriptsPage],
  [/^#\/instances\/([^/]+)$/, instancePage],
];

const page = document.getElementById("page");
const notice = document.getElementById("notice");

// One per sign-in: {name, role, events}; `events` (an AbortController) ends its event
// follower when the session ends.
let session = null;
// Drawing is serialized: a batch of events that arrives while a page draws marks it stale,
// and it is drawn once more when the drawing in progress ends.
let drawing = false;
let stale = false;

function showNotice(text, kind) {
  notice.textContent = text;
  notice.className = kind;
  notice.hidden = false;
}

function clearNotice() {
  notice.hidden = true;
  notice.textContent = "";
}

// What pages may use: who is signed in, what their role allows, post(), which runs an
// action and shows its outcome (the server's refusal word for word) until the next one,
// notice(), which says something of the page's own, and redraw().
function context() {
  return {
    session,
    can: (role) => roleAllows(session.role, role),
    notice: showNotice,
    redraw: draw,
    post: async (what, path, body) => {
      clearNotice();
      try {
        await postJson(path, body);
        showNotice(`${what}: done`, "ok");
      } catch (error) {
        showNotice(error.message, "error");
      }
      draw();
    },
  };
}

// Whether someone is typing in the page (a reason, a filter): a redraw would throw their
// text away, so one the events ask for waits until the field loses the focus.
function typing() {
  const focused = document.activeElement;
  return focused instanceof HTMLInputElement && page.contains(focused);
}

// Then marks the body with the newest event handled (data-events-seen), which tells a test
// the console has had an event and drawn the page for it, or put that off.
async function drawForEvents(events) {
  if (typing()) stale = true;
  else await draw();
  document.body.dataset.eventsSeen = String(events[events.length - 1].seq);
}

async function draw() {
  if (drawing) {
    stale = true;
    return;
  }
  drawing = true;
  try {
    do {
      stale = false;
      await drawOnce();
    } while (stale);
  } finally {
    drawing = false;
  }
}

async function drawOnce() {
  // A page drawn for a session that ended while it was read (signed out, or in again as
  // someone else) is thrown away: it would cover the sign-in form, or show the last
  // person's buttons.
  const drawnFor = session;
  if (!drawnFor) return;
  const hash = location.hash || "#/plans";
  for (const [pattern, render] of kRoutes) {
    const match = hash.match(pattern);
    if (!match) continue;
    try {
      const params = match.slice(1).map(decodeURIComponent);
      const node = await render(context(), ...params);
      if (session !== drawnFor) return;
      page.replaceChildren(node);
    } catch (error) {
      if (session !== drawnFor) return;
      if (error instanceof ApiError && error.status === 401) {
        signOut(`Signed out: ${error.message}`);
        return;
      }
      page.replaceChildren(el("p", { class: "error" }, error.message));
    }
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", hash.startsWith(a.hash));
    return;
  }
  page.replaceChildren(el("p", { class: "error" }, `No page at ${hash}.`));
}

function signInForm(message = "") {
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("who").textContent = "";
  const input = el("input", { type: "password", id: "token", autocomplete: "off", required: true,
    placeholder: "API token (tide token create, or <data dir>/admin.token)" });
  const form = el("form", { id: "sign-in", onsubmit: (event) => {
    event.preventDefault();
    saveToken(input.value.trim());
    start();
  } }, el("h1", {}, "Sign in"), input, el("button", { type: "submit" }, "Sign in"));
  page.replaceChildren(form);
  if (message) showNotice(message, "error");
  else clearNotice();
  input.focus();
}

function signOut(message = "") {
  forgetToken();
  session?.events.abort();
  session = null;
  signInForm(message);
}

async function start() {
  if (!savedToken()) {
    signInForm();
    return;
  }
  let whoami;
  try {
    whoami = await getJson("/v1/whoami");
  } catch (error) {
    signOut(error instanceof ApiError && error.status === 401 ? `Not signed in: ${error.message}` : error.message);
    return;
  }
  clearNotice();
  session = { name: whoami.name, role: whoami.role, events: new AbortController() };
  document.getElementById("nav").hidden = false;
  document.getElementById("sign-out").hidden = false;
  document.getElementById("who").textContent = `${whoami.name} (${whoami.role})`;
  followEvents(whoami.last_event_seq, session.events.signal, drawForEvents);
  draw();
}

window.addEventListener("hashchange", () => {
  clearNotice();
  draw();
});
// A redraw put off while typing runs when the focus leaves the field, unless it moves to
// another control of the page (pressing a button draws the page itself).
page.addEventListener("focusout", (event) => {
  if (stale && !drawing && !page.contains(event.relatedTarget)) draw();
});
document.getElementById("sign-out").addEventListener("click", () => signOut());
start();
