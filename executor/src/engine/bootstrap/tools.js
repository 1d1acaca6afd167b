// Script bootstrap, part 3 of 3: the `tools` namespace and what goes to
// Rust. The files of `bootstrap/` are one function body, joined in order by
// `BOOTSTRAP` in `script_runtime.rs`.
  // --- the `tools` namespace ------------------------------------------------
  // A tenant may see 10,000 tools and a script calls a few, so nothing here
  // is built per visible tool. `tools` and each `tools.<server>` are proxies
  // that resolve a name when the script first reaches it: the host already
  // resolved the names the script's source mentions, and is asked for the
  // rest (`op_quiver_has_name`, `op_quiver_names`). Each behaves as the
  // frozen object it stands for: a name resolves to one value for the whole
  // run, nothing can be added, changed or deleted, and reflection (keys,
  // descriptors, `Object.isFrozen`) first fills the hidden target with every
  // name, then freezes it and answers from it, which the proxy invariants
  // then guarantee.
  function lookupFailed(reply) {
    return scrub(new Error(StringPrototypeSlice(reply, 1)));
  }

  function hostHasName(server, tool) {
    const reply = op_quiver_has_name(server, tool);
    if (reply === "1") return true;
    if (reply === "0") return false;
    throw lookupFailed(reply);
  }

  function hostNames(server) {
    const reply = op_quiver_names(server);
    if (StringPrototypeCharAt(reply, 0) !== "o") throw lookupFailed(reply);
    const names = JSONParse(StringPrototypeSlice(reply, 1));
    return ArrayIsArray(names) ? names : [];
  }

  // `exists(name)` and `make(name)` resolve one name; `names()` lists them
  // all, in order; `fixed` are own properties from the start (`tools.call`).
  function lazyNamespace(exists, make, names, fixed) {
    const target = ObjectCreate(null);
    for (const key of ObjectKeys(fixed)) defineFixed(target, key, fixed[key]);
    const resolved = new Map();
    let whole = false;

    function lookup(key) {
      if (typeof key !== "string") return undefined;
      if (ObjectHasOwn(target, key)) return target[key];
      if (whole) return undefined;
      if (MapPrototypeHas(resolved, key)) return MapPrototypeGet(resolved, key);
      const value = exists(key) ? make(key) : undefined;
      MapPrototypeSet(resolved, key, value);
      return value;
    }

    function fill() {
      if (whole) return;
      const listed = names();
      for (let i = 0; i < listed.length; i++) {
        const key = listed[i];
        if (typeof key !== "string" || ObjectHasOwn(target, key)) continue;
        let value = MapPrototypeGet(resolved, key);
        if (value === undefined) value = make(key);
        ObjectDefineProperty(target, key, { value, enumerable: true });
      }
      ObjectFreeze(target);
      whole = true;
    }

    // A change is tried on the filled, frozen target, so it fails with the
    // engine's own error for a frozen object (strict mode throws).
    return new Proxy(target, {
      get: (_target, key) => lookup(key),
      has: (_target, key) => lookup(key) !== undefined,
      set: (_target, key, value) => {
        fill();
        target[key] = value;
        return true;
      },
      deleteProperty: (_target, key) => {
        if (lookup(key) === undefined) return true;
        fill();
        delete target[key];
        return true;
      },
      defineProperty: (_target, key, descriptor) => {
        fill();
        ObjectDefineProperty(target, key, descriptor);
        return true;
      },
      getOwnPropertyDescriptor: (_target, key) => {
        fill();
        return ReflectGetOwnPropertyDescriptor(target, key);
      },
      ownKeys: () => {
        fill();
        return ReflectOwnKeys(target);
      },
      isExtensible: () => {
        fill();
        return false;
      },
      preventExtensions: () => {
        fill();
        return true;
      },
      getPrototypeOf: () => null,
      setPrototypeOf: (_target, prototype) => {
        fill();
        ObjectSetPrototypeOf(target, prototype);
        return true;
      },
    });
  }

  function serverNamespace(server) {
    return lazyNamespace(
      (tool) => hostHasName(server, tool),
      (tool) => {
        const fn = toolFunction(server, tool);
        harden(fn);
        return fn;
      },
      () => hostNames(server),
      {},
    );
  }

  // --- the Rust side ----------------------------------------------------------
  // What does not depend on the job: `Math.random`'s seed (`seed` is
  // `[n, n, n, n]` as JSON, fresh entropy drawn in the process that will run
  // the script), the `tools` namespace and the frozen global scope. A forked
  // script process calls it while it waits for its job; otherwise `install`
  // does. Once only.
  let prepared = false;
  function prepare(seed) {
    prepareWith(JSONParse(seed));
  }
  function prepareWith(words) {
    if (prepared) return;
    prepared = true;
    for (let i = 0; i < 4; i++) randomState[i] = words[i];
    if ((randomState[0] | randomState[1] | randomState[2] | randomState[3]) === 0) {
      randomState[0] = 1; // the all-zero state would only ever yield zeros
    }
    harden(callTool);
    const tools = lazyNamespace(
      (server) => hostHasName(server, ""),
      serverNamespace,
      () => hostNames(""),
      { call: callTool },
    );
    defineFixed(globalThis, "tools", tools);
    ObjectFreeze(globalThis);
  }

  // Called once, right before the user code: `config` is
  // `{"wallMs": n, "logBytes": n, ..., "seed": [n, n, n, n]}` as JSON (the
  // seed is used only when `prepare` has not run).
  function install(config) {
    const parsed = JSONParse(config);
    wallMs = parsed.wallMs;
    logBytes = parsed.logBytes;
    parallelCalls = parsed.parallelCalls;
    requestBytes = parsed.requestBytes;
    prepareWith(parsed.seed);
  }

  function describeThrown(thrown) {
    let message;
    let stack = null;
    if (thrown instanceof Error) {
      message = errorText(thrown);
      const site = WeakMapPrototypeGet(errorSites, thrown) ?? thrown;
      stack = safely(() => site.stack, null);
    } else {
      message = `Uncaught ${formatLogValue(thrown)}`;
    }
    return {
      message: StringPrototypeSlice(message, 0, 4096),
      stack: typeof stack === "string" ? StringPrototypeSlice(stack, 0, 8192) : null,
    };
  }

  // Awaits the script's promise and encodes how it ended, as one string:
  // `r<json>` (returned), `e<{message, stack}>` (threw), `x<{message}>` (the
  // return value is not JSON).
  async function finish(pending) {
    let value;
    try {
      value = await pending;
    } catch (thrown) {
      return "e" + JSONStringify(describeThrown(thrown));
    }
    let text;
    try {
      text = JSONStringify(value, resultReplacer);
    } catch (error) {
      return "x" + JSONStringify({
        message: `the script's return value cannot be turned into JSON: ${errorText(error)}`,
      });
    }
    return "r" + (text === undefined ? "null" : text);
  }

  return { prepare, install, finish };
})(globalThis);
