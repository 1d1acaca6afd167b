// Quiver script bootstrap. Runs once in every fresh runtime, before any user
// code: it captures the few deno_core ops the script API needs, builds that API,
// removes every global that is not standard JavaScript, disables the
// string-to-code constructors and freezes the intrinsics. Its value,
// `{ install, finish }`, goes to Rust only; nothing captured here is reachable
// from user code.
// Part 1 of 3 (capture, formatting, host requests, console, timers,
// randomness): the files of `bootstrap/` are one function body, joined in
// order by `BOOTSTRAP` in `script_runtime.rs`.
((globalThis) => {
  "use strict";

  // --- capture what we need while it is still reachable -------------------
  const {
    op_quiver_request,
    op_quiver_sleep,
    op_quiver_log,
    op_quiver_has_name,
    op_quiver_names,
  } = globalThis.Deno.core.ops;

  const {
    Array,
    Error,
    JSON,
    Map,
    Number,
    Object,
    Promise,
    Proxy,
    RangeError,
    Reflect,
    Set,
    String,
    Symbol,
    TypeError,
    WeakMap,
    WeakSet,
  } = globalThis;
  const ArrayFrom = Array.from;
  const ArrayIsArray = Array.isArray;
  const JSONParse = JSON.parse;
  const JSONStringify = JSON.stringify;
  const NumberIsInteger = Number.isInteger;
  const ObjectCreate = Object.create;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectEntries = Object.entries;
  const ObjectFreeze = Object.freeze;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ObjectGetOwnPropertyDescriptors = Object.getOwnPropertyDescriptors;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectSetPrototypeOf = Object.setPrototypeOf;
  const ObjectHasOwn = Object.hasOwn;
  const ObjectKeys = Object.keys;
  const ObjectIsFrozen = Object.isFrozen;
  const ReflectApply = Reflect.apply;
  const ReflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
  const ReflectDeleteProperty = Reflect.deleteProperty;
  const ReflectOwnKeys = Reflect.ownKeys;
  const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
  const MapPrototypeEntries = uncurry(Map.prototype.entries);
  const MapPrototypeGet = uncurry(Map.prototype.get);
  const MapPrototypeHas = uncurry(Map.prototype.has);
  const MapPrototypeSet = uncurry(Map.prototype.set);
  const PromisePrototypeThen = uncurry(Promise.prototype.then);
  const PromiseResolve = (value) => ReflectApply(Promise.resolve, Promise, [value]);
  const PromiseReject = (value) => ReflectApply(Promise.reject, Promise, [value]);
  const StringPrototypeCharAt = uncurry(String.prototype.charAt);
  const StringPrototypeSlice = uncurry(String.prototype.slice);
  const StringPrototypeIndexOf = uncurry(String.prototype.indexOf);
  const SymbolPrototypeToString = uncurry(Symbol.prototype.toString);
  const WeakMapPrototypeGet = uncurry(WeakMap.prototype.get);
  const WeakMapPrototypeSet = uncurry(WeakMap.prototype.set);
  const WeakSetPrototypeAdd = uncurry(WeakSet.prototype.add);
  const WeakSetPrototypeHas = uncurry(WeakSet.prototype.has);
  // `globalThis.Function` may already be the engine's thrower here.
  const FunctionPrototype = ObjectGetPrototypeOf(function () {});
  const FunctionPrototypeBind = uncurry(FunctionPrototype.bind);
  const FunctionPrototypeToString = FunctionPrototype.toString;
  const StringPrototypeIncludes = uncurry(String.prototype.includes);
  const StringPrototypeSplit = uncurry(String.prototype.split);
  const ArrayPrototypeFilter = uncurry(Array.prototype.filter);
  const ArrayPrototypeJoin = uncurry(Array.prototype.join);

  // Functions of the script API and of the hardening: their source stays
  // private (`toString` shows them as native code).
  const hostFunctions = new WeakSet();

  // Set by `install` for the execution this runtime serves.
  let wallMs = 0;
  let logBytes = 0;
  let parallelCalls = 1;
  let requestBytes = 0;

  // --- formatting ----------------------------------------------------------
  function safely(fn, fallback) {
    try {
      return fn();
    } catch {
      return fallback;
    }
  }

  function errorText(error) {
    const name = safely(() => String(error.name), "Error");
    const message = safely(() => String(error.message), "");
    return message === "" ? name : `${name}: ${message}`;
  }

  function describeKey(key) {
    return key === "" ? "the top level" : `key "${key}"`;
  }

  // JSON with the values JSON.stringify would lose or reject made plain.
  function plainValue(value) {
    if (typeof value === "bigint") return String(value);
    if (value instanceof Map) {
      const object = {};
      for (const [k, v] of MapPrototypeEntries(value)) {
        ObjectDefineProperty(object, String(k), {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return object;
    }
    if (value instanceof Set) return ArrayFrom(value);
    if (value instanceof Error) return errorText(value);
    return value;
  }

  function logReplacer(_key, value) {
    if (typeof value === "function") return functionText(value);
    if (typeof value === "symbol") return SymbolPrototypeToString(value);
    return plainValue(value);
  }

  function resultReplacer(key, value) {
    if (typeof value === "function") {
      throw new TypeError(
        `a function cannot be returned (found at ${describeKey(key)}); return plain data`,
      );
    }
    if (typeof value === "symbol") return undefined;
    return plainValue(value);
  }

  function requestReplacer(_key, value) {
    return plainValue(value);
  }

  function functionText(fn) {
    const name = safely(() => String(fn.name), "");
    return name === "" ? "[Function]" : `[Function: ${name}]`;
  }

  function formatLogValue(value) {
    switch (typeof value) {
      case "string":
        return value;
      case "undefined":
        return "undefined";
      case "function":
        return functionText(value);
      case "symbol":
        return SymbolPrototypeToString(value);
      case "number":
      case "boolean":
      case "bigint":
        return String(value);
    }
    if (value === null) return "null";
    if (value instanceof Error) return errorText(value);
    const json = safely(() => JSONStringify(value, logReplacer), undefined);
    if (typeof json === "string") return json;
    return safely(() => String(value), "[object]");
  }

  // --- host requests ---------------------------------------------------------
  // Errors from the host are created after an await, where the script's frames
  // are gone; `errorSites` remembers an Error made at the call site so the
  // reported line is the script's.
  const errorSites = new WeakMap();

  // Stack frames of this bootstrap are internals: errors it creates (or lets
  // through) carry only the script's own frames.
  function scrub(error) {
    const stack = safely(() => error.stack, undefined);
    if (typeof stack === "string") {
      const kept = ArrayPrototypeFilter(
        StringPrototypeSplit(stack, "\n"),
        (line) => !StringPrototypeIncludes(line, "quiver:bootstrap"),
      );
      safely(() =>
        ObjectDefineProperty(error, "stack", {
          value: ArrayPrototypeJoin(kept, "\n"),
          writable: true,
          enumerable: false,
          configurable: true,
        }), undefined);
    }
    return error;
  }

  // Requests are admitted before they are serialised: at most
  // `parallelCalls` are with the host at once, the rest wait here as the
  // objects the script passed (no copies), in order.
  const waiting = [];
  let waitingHead = 0;
  let waitingTail = 0;
  let inFlight = 0;

  function request(body) {
    const site = new Error("host request");
    return new Promise((resolve, reject) => {
      waiting[waitingTail++] = { body, site, resolve, reject };
      pump();
    });
  }

  function hostError(message, site) {
    const error = new Error(message);
    WeakMapPrototypeSet(errorSites, error, site);
    const stack = safely(() => scrub(site).stack, undefined);
    if (typeof stack === "string" && StringPrototypeIndexOf(stack, "\n") >= 0) {
      ObjectDefineProperty(error, "stack", {
        value: `Error: ${message}${StringPrototypeSlice(stack, StringPrototypeIndexOf(stack, "\n"))}`,
        writable: true,
        enumerable: false,
        configurable: true,
      });
    }
    return error;
  }

  // A lower bound on the serialised size of `value` (every string counts its
  // length), computed without building anything and given up once it
  // passes `budget`: an oversized request is refused before it is copied.
  function sizeAtLeast(value, budget) {
    let size = 0;
    const stack = [value];
    const seen = new Set();
    while (stack.length > 0 && size <= budget) {
      const item = stack.pop();
      if (typeof item === "string") {
        size += item.length + 2;
      } else if (typeof item === "object" && item !== null && !seen.has(item)) {
        seen.add(item);
        const keys = safely(() => ObjectKeys(item), []);
        for (let i = 0; i < keys.length && size <= budget; i++) {
          size += keys[i].length + 4;
          stack.push(safely(() => item[keys[i]], undefined));
        }
      } else {
        size += 1;
      }
    }
    return size;
  }

  function pump() {
    while (inFlight < parallelCalls && waitingHead < waitingTail) {
      const job = waiting[waitingHead];
      waiting[waitingHead++] = undefined;
      if (sizeAtLeast(job.body, requestBytes) > requestBytes) {
        job.reject(hostError(
          `the request is over ${requestBytes} bytes; a script may send at most ${requestBytes} bytes at once`,
          job.site,
        ));
        continue;
      }
      let text;
      try {
        text = JSONStringify(job.body, requestReplacer);
      } catch (error) {
        job.reject(scrub(error));
        continue;
      }
      if (text.length > requestBytes) {
        job.reject(hostError(
          `the request is over ${requestBytes} bytes; a script may send at most ${requestBytes} bytes at once`,
          job.site,
        ));
        continue;
      }
      inFlight++;
      PromisePrototypeThen(op_quiver_request(text), (reply) => {
        inFlight--;
        pump();
        if (StringPrototypeCharAt(reply, 0) === "o") {
          let value;
          try {
            value = JSONParse(StringPrototypeSlice(reply, 1));
          } catch {
            job.reject(hostError("the host's answer could not be read", job.site));
            return;
          }
          job.resolve(value);
        } else {
          job.reject(hostError(StringPrototypeSlice(reply, 1), job.site));
        }
      });
    }
  }

  function nullObject(properties) {
    const object = ObjectCreate(null);
    for (const [key, value] of ObjectEntries(properties)) {
      ObjectDefineProperty(object, key, { value, enumerable: true });
    }
    return object;
  }

  function named(fn, name) {
    ObjectDefineProperty(fn, "name", { value: name });
    WeakSetPrototypeAdd(hostFunctions, fn);
    return fn;
  }

  function callTool(name, args) {
    if (typeof name !== "string") {
      throw scrub(new TypeError(
        'tools.call(name, args): name must be a string such as "server.tool"',
      ));
    }
    return request({
      op: "call_tool",
      name,
      args: args === undefined ? {} : args,
    });
  }

  function toolFunction(server, tool) {
    const name = `${server}.${tool}`;
    return named(
      (args) =>
        request({ op: "call_tool", name, args: args === undefined ? {} : args }),
      tool,
    );
  }

  function search(query, limit = 10) {
    const max = Number(limit);
    if (!NumberIsInteger(max) || max < 1 || max > 0xffffffff) {
      throw scrub(new RangeError("search(query, limit): limit must be a whole number >= 1"));
    }
    return request({ op: "search", query: String(query), limit: max });
  }

  function describe(name) {
    return request({ op: "describe", name: String(name) });
  }

  const stash = nullObject({
    get: named((key) => request({ op: "stash_get", key: String(key) }), "get"),
    set: named((key, value, ttlSecs) => {
      let ttl = null;
      if (ttlSecs !== undefined && ttlSecs !== null) {
        ttl = Number(ttlSecs);
        if (!NumberIsInteger(ttl) || ttl < 0) {
          throw scrub(new RangeError(
            "stash.set(key, value, ttlSecs): ttlSecs must be a whole number >= 0",
          ));
        }
      }
      return request({
        op: "stash_set",
        key: String(key),
        value: value === undefined ? null : value,
        ttl_secs: ttl,
      });
    }, "set"),
    delete: named(
      (key) => request({ op: "stash_delete", key: String(key) }),
      "delete",
    ),
    keys: named(() => request({ op: "stash_keys" }), "keys"),
  });

  const resources = nullObject({
    list: named(() => request({ op: "list_resources" }), "list"),
    read: named((uri) => {
      if (typeof uri !== "string") {
        throw scrub(new TypeError(
          'resources.read(uri): uri must be a string such as "file:///notes.txt"',
        ));
      }
      return request({ op: "read_resource", uri });
    }, "read"),
  });

  // --- console, timers -------------------------------------------------------
  let logsFull = false;
  let logsCut = false;

  function logger(prefix, name) {
    return named((...values) => {
      if (logsCut) return;
      if (logsFull) {
        // One more line than fits: the buffer records the cut and its marker.
        op_quiver_log("");
        logsCut = true;
        return;
      }
      let line = prefix;
      for (let i = 0; i < values.length; i++) {
        if (i > 0) line += " ";
        line += formatLogValue(values[i]);
        if (line.length > logBytes) break;
      }
      if (line.length > logBytes) line = StringPrototypeSlice(line, 0, logBytes + 1);
      if (!op_quiver_log(line)) logsFull = true;
    }, name);
  }

  const console = nullObject({
    log: logger("", "log"),
    info: logger("", "info"),
    debug: logger("", "debug"),
    warn: logger("[warn] ", "warn"),
    error: logger("[error] ", "error"),
  });

  let nextTimerId = 1;

  // Callbacks run as bound functions, so no frame of this bootstrap sits
  // under them on the stack.
  function setTimeout(callback, delay = 0, ...args) {
    if (typeof callback !== "function") {
      throw scrub(new TypeError("setTimeout(callback, ms): callback must be a function"));
    }
    let ms = Number(delay);
    if (!(ms > 0)) ms = 0;
    if (ms > wallMs) {
      throw scrub(new RangeError(
        `setTimeout: ${ms} ms is longer than the script's ${wallMs} ms time limit`,
      ));
    }
    PromisePrototypeThen(
      op_quiver_sleep(ms),
      FunctionPrototypeBind(callback, undefined, ...args),
    );
    return nextTimerId++;
  }

  function queueMicrotask(callback) {
    if (typeof callback !== "function") {
      throw scrub(new TypeError("queueMicrotask(callback): callback must be a function"));
    }
    PromisePrototypeThen(
      PromiseResolve(undefined),
      FunctionPrototypeBind(callback, undefined),
    );
  }

  // --- randomness ---------------------------------------------------------------
  // `Math.random` draws from a generator seeded by `install` with fresh
  // entropy from the host for every execution, never from state an earlier
  // execution could have advanced or observed (a worker may start every
  // execution from one prepared image of this runtime). xoshiro128**.
  const { Uint32Array } = globalThis;
  const MathImul = Math.imul;
  const randomState = new Uint32Array(4);
  function nextRandomWord() {
    const s = randomState;
    const rotated = (s[1] * 5) >>> 0;
    const result = MathImul((rotated << 7) | (rotated >>> 25), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 11) | (s[3] >>> 21);
    return result;
  }
  // A method, like the engine's own: no `prototype`, not a constructor.
  const random = named({
    random() {
      // 53 random bits: 27 from one word, 26 from the next.
      return ((nextRandomWord() >>> 5) * 67108864 + (nextRandomWord() >>> 6)) /
        9007199254740992;
    },
  }.random, "random");
  ObjectDefineProperty(Math, "random", {
    value: random,
    writable: true,
    enumerable: false,
    configurable: true,
  });

  for (const fn of [request, callTool, search, describe, setTimeout, queueMicrotask]) {
    WeakSetPrototypeAdd(hostFunctions, fn);
  }

