// An MCP server with an MCP App, built on the official SDKs
// (@modelcontextprotocol/server and @modelcontextprotocol/ext-apps, pinned by
// scripts/install-node-tools.sh), over stdio: a counter whose view shows the
// call's result, bumps the counter through a tool only the view may call,
// and tries what it must not reach (a tool only the model may call, a tool
// of another server, a tool of its own server outside the tenant's view,
// the console's API over the network). It offers the
// app-enhanced tool only to a client that declares the UI extension at
// `initialize`, as the SDK's documentation shows, and otherwise a plain one.
//
// node app_server.mjs <node_modules dir>
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const load = (name) => import(pathToFileURL(createRequire(path.join(modules, "x.js")).resolve(name)).href);
const { McpServer } = await load("@modelcontextprotocol/server");
const { StdioServerTransport } = await load("@modelcontextprotocol/server/stdio");
const apps = await load("@modelcontextprotocol/ext-apps/server");

const VIEW = "ui://counter/view.html";
let count = 0;
const text = (t) => ({ content: [{ type: "text", text: t }] });

// The SDK's browser bundle, as a classic global (`window.ExtApps`) the view's
// own script reads: a view's HTML is one self-contained document.
const bundlePath = path.join(modules, "@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js");
const bundle = readFileSync(bundlePath, "utf8").replace(/export\s*\{([^}]*)\};?\s*$/, (_, list) => {
  const pairs = list.split(",").map((part) => {
    const [local, exported] = part.trim().split(/\s+as\s+/);
    return `${JSON.stringify(exported || local)}: ${local}`;
  });
  return `window.ExtApps = {${pairs.join(",")}};`;
});

const viewScript = `
const { App } = window.ExtApps;
const show = (id, value) => { document.getElementById(id).textContent = value; };
const first = (r) => (r && r.content && r.content[0] && r.content[0].text) || JSON.stringify(r);
const attempt = async (id, name) => {
  try {
    const r = await app.callServerTool({ name, arguments: {} });
    show(id, r.isError ? "tool error: " + first(r) : "reached: " + first(r));
  } catch (e) {
    show(id, "refused: " + (e && e.message));
  }
};
const app = new App({ name: "counter-view", version: "1.0.0" });
app.ontoolinput = (params) => show("input", JSON.stringify(params.arguments || {}));
app.ontoolresult = async (result) => {
  show("result", first(result));
  try {
    const bumped = await app.callServerTool({ name: "bump", arguments: {} });
    show("bumped", first(bumped));
  } catch (e) {
    show("bumped", "failed: " + (e && e.message));
  }
  await attempt("peek", "peek");
  await attempt("outside", "secret");
  await attempt("hidden", "reset");
  // A no-cors request resolves whatever the answer, unless the page's
  // Content-Security-Policy forbids the request itself.
  try {
    await fetch("/console/api/tools", { mode: "no-cors", credentials: "include" });
    show("fetch", "sent");
  } catch (e) {
    show("fetch", "blocked");
  }
  show("done", "done");
};
await app.connect();
`;

const html = `<!doctype html><html><head><meta charset="utf-8"><title>Counter</title></head><body>
<p>input <span id="input"></span></p><p>result <span id="result"></span></p>
<p>bumped <span id="bumped"></span></p><p>peek <span id="peek"></span></p>
<p>outside <span id="outside"></span></p><p>hidden <span id="hidden"></span></p><p>fetch <span id="fetch"></span></p><p id="done"></p>
<script type="module">${bundle}</script>
<script type="module">${viewScript}</script>
</body></html>`;

const server = new McpServer({ name: "counter", version: "1.0.0" });

apps.registerAppResource(server, "Counter view", VIEW, { description: "The counter's view" }, async () => ({
  contents: [{
    uri: VIEW,
    mimeType: apps.RESOURCE_MIME_TYPE,
    text: html,
    _meta: { ui: { csp: { connectDomains: ["https://api.example.com"] } } },
  }],
}));

// A second view, linked in the older flat form, whose policy only its
// listing entry declares (hosts fall back to it).
const LEGACY = "ui://counter/legacy.html";
apps.registerAppResource(server, "Legacy view", LEGACY, {
  description: "The counter, plainly",
  _meta: { ui: { csp: { resourceDomains: ["https://cdn.example.com"] } } },
}, async () => ({
  contents: [{ uri: LEGACY, mimeType: apps.RESOURCE_MIME_TYPE, text: "<!doctype html><p id=legacy>legacy</p>" }],
}));
server.registerTool("show_legacy", {
  description: "Show the counter in its older view.",
  _meta: { "ui/resourceUri": LEGACY },
}, async () => text(`counter is ${count}`));

server.registerTool("peek", {
  description: "Tell the counter's value without changing it.",
  _meta: { ui: { visibility: ["model"] } },
}, async () => text(`counter is ${count}`));

apps.registerAppTool(server, "bump", {
  description: "Add one to the counter (the view's button).",
  _meta: { ui: { resourceUri: VIEW, visibility: ["app"] } },
}, async () => { count += 1; return text(`counter is ${count}`); });

// Tests keep it out of the tenant's view: the view must not reach it.
apps.registerAppTool(server, "reset", {
  description: "Set the counter back to zero (the view's reset button).",
  _meta: { ui: { resourceUri: VIEW, visibility: ["app"] } },
}, async () => { count = 0; return text("counter is 0"); });

server.server.oninitialized = () => {
  const ui = apps.getUiCapability(server.server.getClientCapabilities());
  if (ui && ui.mimeTypes && ui.mimeTypes.includes(apps.RESOURCE_MIME_TYPE)) {
    apps.registerAppTool(server, "show_counter", {
      description: "Show the counter in an interactive view.",
      _meta: { ui: { resourceUri: VIEW } },
    }, async () => text(`counter is ${count}`));
  } else {
    server.registerTool("show_counter", { description: "Show the counter as text." },
      async () => text(`counter is ${count} (no view: the client renders no apps)`));
  }
};

await server.connect(new StdioServerTransport());
