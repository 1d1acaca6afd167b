// The console as an MCP Apps host (io.modelcontextprotocol/ui): renders the
// view a tool links, for a call made on the tool's page, and relays the
// view's JSON-RPC over postMessage. The view runs in an iframe sandboxed to
// scripts only (an opaque origin: no cookie, no storage, nothing of this
// page) under the policy the edge serves it with; every message is checked
// to come from that iframe. A view's tools/call goes to the edge for the
// view's own server, whatever the message says; everything else a view may
// ask (links, messages to the model, display modes) this host declines.
"use strict";

(function () {
  const PROTOCOL = "2026-01-26";
  const NOT_SUPPORTED = -32601;

  // Renders the view of `app` ({server, uri}) for a call of `args` that gave
  // `result`, into `into`; `post(path, body)` reaches the console API.
  // Every relayed message is written to `log` (a list element).
  function render(into, app, args, result, post, log) {
    const frame = document.createElement("iframe");
    frame.className = "app-frame";
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("title", `View of ${app.server}`);
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.src = "/console/api/app/view?" + new URLSearchParams({ server: app.server, uri: app.uri });
    let initialized = false;

    function note(text, kind) {
      const item = document.createElement("li");
      item.textContent = text;
      if (kind) item.className = kind;
      log.append(item);
    }
    function send(message) {
      // An opaque origin has no name to target: only this frame's window
      // receives it.
      if (frame.contentWindow) frame.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*");
    }
    function answer(id, outcome) {
      send("error" in outcome ? { id, error: outcome.error } : { id, result: outcome.result });
    }

    async function request(message) {
      const params = message.params || {};
      switch (message.method) {
        case "ui/initialize":
          return {
            result: {
              protocolVersion: PROTOCOL,
              hostInfo: { name: "quiver-console", version: "1" },
              hostCapabilities: { serverTools: {}, logging: {} },
              hostContext: { theme: "light", displayMode: "inline", availableDisplayModes: ["inline"] },
            },
          };
        case "tools/call": {
          const name = String(params.name || "");
          try {
            const called = await post("/app/call", { server: app.server, name, arguments: params.arguments || {} });
            note(`tools/call ${name} → ${called.isError ? "tool error" : "ok"}`, "relay-ok");
            return { result: called };
          } catch (e) {
            note(`tools/call ${name} → refused: ${e.message}`, "relay-refused");
            return { error: { code: -32600, message: e.message } };
          }
        }
        case "ping":
          return { result: {} };
        default:
          note(`${message.method} → not supported here`, "relay-refused");
          return { error: { code: NOT_SUPPORTED, message: `${message.method} is not supported by this host` } };
      }
    }

    function notification(message) {
      const params = message.params || {};
      switch (message.method) {
        case "ui/notifications/initialized":
          if (initialized) return;
          initialized = true;
          note("view initialized", "relay-ok");
          send({ method: "ui/notifications/tool-input", params: { arguments: args } });
          send({ method: "ui/notifications/tool-result", params: result });
          return;
        case "ui/notifications/size-changed":
          if (Number.isFinite(params.height)) frame.style.height = `${Math.min(Math.max(params.height, 40), 2000)}px`;
          return;
        case "notifications/message":
          note(`log: ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`);
          return;
        default:
          return;
      }
    }

    function onMessage(event) {
      if (event.source !== frame.contentWindow) return;
      const message = event.data;
      if (!message || message.jsonrpc !== "2.0" || typeof message.method !== "string") return;
      if ("id" in message) request(message).then((outcome) => answer(message.id, outcome));
      else notification(message);
    }
    window.addEventListener("message", onMessage);
    // The listener goes with the frame.
    const gone = new MutationObserver(() => {
      if (!frame.isConnected) {
        window.removeEventListener("message", onMessage);
        gone.disconnect();
      }
    });
    gone.observe(document.body, { childList: true, subtree: true });
    into.replaceChildren(frame);
    return frame;
  }

  window.QuiverApps = { render };
})();
