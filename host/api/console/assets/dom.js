// Building the page from the server's data. Every string the server sends becomes a text
// node (textContent), never markup: a plan, a policy reason or a log line that holds
// "<script>" shows as those characters. Nothing here parses a string as markup.

// el("a", {href: "#/fleet", class: "x"}, "text", child, ...): attributes by setAttribute,
// except `on<event>` keys, which are listeners; strings and numbers become text nodes,
// null and false are skipped, arrays are flattened.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

// A table of `rows` (arrays of cells: strings or nodes) under `headers`; `empty` stands in
// a single row when there are none.
export function table(headers, rows, empty = "none") {
  const body = rows.length > 0
    ? rows.map((cells) => el("tr", {}, cells.map((cell) => el("td", {}, cell))))
    : [el("tr", {}, el("td", { colspan: headers.length, class: "empty" }, empty))];
  return el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), el("tbody", {}, body));
}

// "label: value" pairs as a definition list; pairs whose value is "" or null are left out.
export function fields(pairs) {
  const items = [];
  for (const [label, value, key] of pairs) {
    if (value === null || value === undefined || value === "") continue;
    items.push(el("dt", {}, label), el("dd", { "data-field": key }, value));
  }
  return el("dl", { class: "fields" }, items);
}

// A state as a badge whose colour follows its meaning (console.css).
export function badge(state) {
  return el("span", { class: `badge state-${String(state).toLowerCase()}` }, state);
}

// "2026-11-27T20:15:03Z" → "2026-11-27 20:15:03"; "" for none.
export function when(timestamp) {
  return timestamp ? String(timestamp).replace("T", " ").replace(/\.\d+/, "").replace("Z", "") : "";
}

export function link(href, text) {
  return el("a", { href }, text);
}
