// Script bootstrap, part 2 of 3: hardening of the global scope and the
// intrinsics. The files of `bootstrap/` are one function body, joined in
// order by `BOOTSTRAP` in `script_runtime.rs`; this part uses what part 1
// captured.
  // --- hardening --------------------------------------------------------------
  function fail(what) {
    throw new Error(`quiver bootstrap: could not ${what}`);
  }

  function defineFixed(object, key, value) {
    ObjectDefineProperty(object, key, {
      value,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }

  // 1. No string-to-code: every Function-family constructor is replaced, on
  //    its prototype's `constructor` and (for Function) on the global, by a
  //    thrower that keeps the prototype so `instanceof` still works.
  const functionPrototypes = [
    ObjectGetPrototypeOf(function () {}),
    ObjectGetPrototypeOf(async function () {}),
    ObjectGetPrototypeOf(function* () {}),
    ObjectGetPrototypeOf(async function* () {}),
  ];
  let disabledFunction;
  for (const prototype of functionPrototypes) {
    const disabled = function () {
      throw new TypeError(
        "code generation from strings is disabled in Quiver scripts",
      );
    };
    defineFixed(disabled, "prototype", prototype);
    defineFixed(prototype, "constructor", disabled);
    WeakSetPrototypeAdd(hostFunctions, disabled);
    disabledFunction ??= disabled;
  }

  // 2. No V8 stack-trace hooks (their call sites can hand out functions),
  //    and a fixed stack depth (the engine's accessor would stay writable
  //    through a freeze).
  for (const key of ["prepareStackTrace", "captureStackTrace"]) {
    if (ObjectHasOwn(Error, key) && !ReflectDeleteProperty(Error, key)) {
      fail(`remove Error.${key}`);
    }
  }
  if (ObjectHasOwn(Error, "stackTraceLimit")) {
    const depth = safely(() => Number(Error.stackTraceLimit), 10);
    ObjectDefineProperty(Error, "stackTraceLimit", {
      value: depth,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }

  // 2b. Source text of the script API stays private.
  const hiddenToString = named(function toString() {
    if (WeakSetPrototypeHas(hostFunctions, this)) {
      return `function ${safely(() => String(this.name), "")}() { [native code] }`;
    }
    return ReflectApply(FunctionPrototypeToString, this, []);
  }, "toString");
  ObjectDefineProperty(functionPrototypes[0], "toString", {
    value: hiddenToString,
    writable: true,
    enumerable: false,
    configurable: true,
  });

  // 3. Only standard JavaScript stays global; everything else (Deno,
  //    __bootstrap, eval, WebAssembly, SharedArrayBuffer, Atomics, WeakRef,
  //    ShadowRealm, the engine's console and timers, ...) goes. Intl goes
  //    too: scripts rarely need it and it is most of the intrinsics to freeze
  //    (`toLocaleString` and friends still work).
  const keptGlobals = new Set([
    "globalThis", "Infinity", "NaN", "undefined",
    "isFinite", "isNaN", "parseFloat", "parseInt",
    "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent",
    "escape", "unescape",
    "Object", "Boolean", "Symbol", "Number", "BigInt", "Math", "Date",
    "String", "RegExp", "JSON", "Reflect", "Proxy", "Promise", "Iterator",
    "Array", "Map", "Set", "WeakMap", "WeakSet",
    "ArrayBuffer", "DataView", "Int8Array", "Uint8Array", "Uint8ClampedArray",
    "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
    "Float16Array", "Float32Array", "Float64Array",
    "BigInt64Array", "BigUint64Array",
    "Error", "AggregateError", "EvalError", "RangeError", "ReferenceError",
    "SyntaxError", "TypeError", "URIError", "SuppressedError",
    "DisposableStack", "AsyncDisposableStack",
  ]);
  for (const key of ReflectOwnKeys(globalThis)) {
    if (typeof key === "string" && keptGlobals.has(key)) continue;
    if (!ReflectDeleteProperty(globalThis, key)) {
      fail(`remove the global ${String(key)}`);
    }
  }

  // 4. The script API, fixed on the global.
  defineFixed(globalThis, "Function", disabledFunction);
  defineFixed(globalThis, "console", console);
  defineFixed(globalThis, "search", search);
  defineFixed(globalThis, "describe", describe);
  defineFixed(globalThis, "stash", stash);
  defineFixed(globalThis, "resources", resources);
  defineFixed(globalThis, "setTimeout", setTimeout);
  defineFixed(globalThis, "queueMicrotask", queueMicrotask);

  // 5. Frozen prototypes make `obj.toString = f` throw even on an ordinary
  //    object (the "override mistake"); these accessors keep assignment to
  //    the commonly shadowed names working on the object assigned to.
  function tameOverride(object, key) {
    const descriptor = ObjectGetOwnPropertyDescriptor(object, key);
    if (!descriptor || !ObjectHasOwn(descriptor, "value")) return;
    const value = descriptor.value;
    ObjectDefineProperty(object, key, {
      get: named(function () {
        return value;
      }, `get ${key}`),
      set: named(function (next) {
        if (this === object) {
          throw new TypeError(`Cannot assign to read only property '${key}'`);
        }
        if (ObjectHasOwn(this, key)) {
          this[key] = next;
        } else {
          ObjectDefineProperty(this, key, {
            value: next,
            writable: true,
            enumerable: true,
            configurable: true,
          });
        }
      }, `set ${key}`),
      enumerable: descriptor.enumerable,
      configurable: false,
    });
  }
  for (const key of ReflectOwnKeys(Object.prototype)) {
    if (typeof key === "string" && key !== "__proto__") {
      tameOverride(Object.prototype, key);
    }
  }
  // `this.name = ...` in a subclass constructor is the usual custom error.
  for (const constructor of [
    Error, globalThis.AggregateError, globalThis.EvalError, RangeError,
    globalThis.ReferenceError, globalThis.SyntaxError, TypeError,
    globalThis.URIError, globalThis.SuppressedError,
  ]) {
    if (typeof constructor !== "function") continue;
    for (const key of ["name", "message", "toString"]) {
      tameOverride(constructor.prototype, key);
    }
  }
  tameOverride(functionPrototypes[0], "toString");

  // 6. Freeze everything reachable from the global scope, plus the intrinsics
  //    only reachable through syntax.
  // Runs only before user code (here and in `install`), so plain method
  // calls are safe and keep this walk fast.
  const frozen = new Set();
  // A freeze leaves accessors working: a setter on a constructor (the
  // engine's legacy statics) would still change shared state. Such a
  // property becomes a read-only value.
  function pinStaticAccessors(fn) {
    const descriptors = ObjectGetOwnPropertyDescriptors(fn);
    for (const key of ReflectOwnKeys(descriptors)) {
      const descriptor = descriptors[key];
      if (
        typeof descriptor.set !== "function" ||
        WeakSetPrototypeHas(hostFunctions, descriptor.set) ||
        // %ThrowTypeError%: the poison pill of `caller` and `arguments`.
        descriptor.get === descriptor.set
      ) {
        continue;
      }
      if (!descriptor.configurable) fail(`pin the accessor ${String(key)}`);
      ObjectDefineProperty(fn, key, {
        value: safely(() => ReflectApply(descriptor.get, fn, []), undefined),
        writable: false,
        enumerable: descriptor.enumerable,
        configurable: false,
      });
    }
  }
  function harden(root) {
    const stack = [root];
    while (stack.length > 0) {
      const value = stack.pop();
      if (
        (typeof value !== "object" && typeof value !== "function") ||
        value === null ||
        frozen.has(value)
      ) {
        continue;
      }
      frozen.add(value);
      if (typeof value === "function" && value !== FunctionPrototype) {
        pinStaticAccessors(value);
      }
      ObjectFreeze(value);
      stack.push(ObjectGetPrototypeOf(value));
      const descriptors = ObjectGetOwnPropertyDescriptors(value);
      for (const key of ReflectOwnKeys(descriptors)) {
        const descriptor = descriptors[key];
        if (ObjectHasOwn(descriptor, "value")) {
          stack.push(descriptor.value);
        } else {
          stack.push(descriptor.get, descriptor.set);
        }
      }
    }
  }
  function* generator() {}
  async function* asyncGenerator() {}
  const hiddenIntrinsics = [
    ...functionPrototypes,
    generator(),
    asyncGenerator(),
    [][Symbol.iterator](),
    ""[Symbol.iterator](),
    new Map()[Symbol.iterator](),
    new Set()[Symbol.iterator](),
    /x/[Symbol.matchAll](""),
    (function () {
      return arguments;
    })(),
  ];
  const arrayIterator = [].values();
  if (typeof arrayIterator.map === "function") {
    hiddenIntrinsics.push(arrayIterator.map((x) => x));
  }
  if (typeof globalThis.Iterator?.from === "function") {
    hiddenIntrinsics.push(globalThis.Iterator.from({ next: () => ({ done: true }) }));
  }
  frozen.add(globalThis);
  for (const value of hiddenIntrinsics) harden(value);
  for (const key of ReflectOwnKeys(globalThis)) {
    const descriptor = ObjectGetOwnPropertyDescriptor(globalThis, key);
    harden(descriptor.value);
    harden(descriptor.get);
    harden(descriptor.set);
  }
  if (!ObjectIsFrozen(Object.prototype) || !ObjectIsFrozen(console)) {
    fail("freeze the intrinsics");
  }

