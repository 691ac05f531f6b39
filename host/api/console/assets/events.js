// The Events page: the event log newest first, following new events as they come, with a
// filter by kind or kind family and "Load older" to page back. The API pages only forward
// (GET /v1/events?after=), so an older page is asked for as a window of seqs below the
// oldest one looked at: `after` that far back, and only what lies below kept.

import { getJson } from "./api.js";
import { el, table, when } from "./dom.js";

export const kEventHeaders = ["Seq", "At", "Actor", "Kind", "Subject", "Data"];

// Events shown at first, and added by each "Load older" where that many are left.
const kPageEvents = 200;
// Seqs one request looks through while a filter is set: the API's largest page, so a
// window's matches are never cut short.
const kFilteredWindow = 1000;
// Requests one "Load older" makes at most while a filter matches little: 20,000 seqs.
const kMostWindows = 20;
// Events kept while following; the oldest beyond go (Load older brings them back).
const kMostShown = 2000;

// `events` in ascending seq order, as table rows newest first.
export function eventRows(events) {
  return [...events].reverse().map((e) => [String(e.seq), when(e.at), e.actor, e.kind, e.subject,
    el("code", {}, JSON.stringify(e.data))]);
}

// The `kind` the API is asked for: a family ("operation", "operation." or "operation.*")
// becomes the prefix "operation.*", a whole kind ("operation.state") stays as it is (every
// kind is family.name); "" for no filter.
export function kindQuery(text) {
  const kind = text.trim();
  if (!kind || kind.endsWith(".*")) return kind;
  if (kind.endsWith(".")) return `${kind}*`;
  return kind.includes(".") ? kind : `${kind}.*`;
}

// What the page shows, kept across the redraws app.js makes on every batch of events:
// `filter` (the query's "&kind=..."), its `events` in ascending order, `oldestLooked` (the
// lowest seq looked at; 1 once nothing older is left) and `newestLooked` (the seq the log
// stood at when last read). Changed only through serialized(), so a redraw and a "Load
// older" never interleave.
let shown = null;
let work = Promise.resolve();

function serialized(task) {
  const done = work.then(task);
  work = done.catch(() => {});
  return done;
}

async function loadOlder(view) {
  const window = view.filter ? kFilteredWindow : kPageEvents;
  const found = [];
  for (let asked = 0; asked < kMostWindows && view.oldestLooked > 1 && found.length < kPageEvents; ++asked) {
    const after = Math.max(0, view.oldestLooked - 1 - window);
    const page = await getJson(`/v1/events?after=${after}&limit=${window}${view.filter}`);
    const older = page.items.filter((e) => e.seq < view.oldestLooked);
    found.unshift(...older);
    // Seqs have no gaps, so an empty unfiltered window is where retention pruned the log.
    view.oldestLooked = !view.filter && older.length === 0 ? 1 : after + 1;
  }
  view.events.unshift(...found);
}

// Adds what the log gained since it was last read; false when that is more than a page,
// and the view had better start again from the newest.
async function readNewer(view) {
  const last = (await getJson("/v1/whoami")).last_event_seq;
  const page = await getJson(`/v1/events?after=${view.newestLooked}&limit=1000${view.filter}`);
  if (page.next_after) return false;
  view.events.push(...page.items);
  view.newestLooked = Math.max(last, page.items.length > 0 ? page.items[page.items.length - 1].seq : 0);
  if (view.events.length > kMostShown) {
    view.events.splice(0, view.events.length - kMostShown);
    view.oldestLooked = view.events[0].seq;
  }
  return true;
}

async function newestView(filter) {
  const last = (await getJson("/v1/whoami")).last_event_seq;
  const view = { filter, events: [], oldestLooked: last + 1, newestLooked: last };
  await loadOlder(view);
  return view;
}

function rangeText(view) {
  const count = `${view.events.length} event${view.events.length === 1 ? "" : "s"}`;
  const back = view.oldestLooked > 1 ? `; looked back to seq ${view.oldestLooked}` : "; nothing older is kept";
  return `${count}${back}.`;
}

// The newest events (kPageEvents), or those of a kind or family, following the log.
export async function eventsPage(ctx, kind = "") {
  const query = kindQuery(kind);
  const filter = query ? `&kind=${encodeURIComponent(query)}` : "";
  const view = await serialized(async () => {
    if (!shown || shown.filter !== filter || !(await readNewer(shown))) shown = await newestView(filter);
    return shown;
  });
  const input = el("input", { type: "text", value: kind, placeholder: "kind or family: operation, node.unreachable" });
  const form = el("form", { class: "filter", onsubmit: (event) => {
    event.preventDefault();
    location.hash = input.value ? `#/events/${encodeURIComponent(input.value.trim())}` : "#/events";
  } }, input, el("button", { type: "submit" }, "Filter"));
  const events = table(kEventHeaders, eventRows(view.events), "no events");
  events.id = "events";
  const older = el("button", {
    type: "button", id: "load-older", disabled: view.oldestLooked <= 1,
    title: view.oldestLooked <= 1 ? "the log keeps nothing older" : `events before seq ${view.oldestLooked}`,
    onclick: async () => {
      try {
        await serialized(() => loadOlder(view));
      } catch (error) {
        ctx.notice(error.message, "error");
      }
      ctx.redraw();
    },
  }, "Load older");
  return el("div", {},
    el("h1", {}, "Events"), form,
    el("p", { id: "events-range" }, rangeText(view)),
    events,
    el("div", { class: "controls" }, older));
}
