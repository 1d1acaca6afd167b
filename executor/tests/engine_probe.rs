use deno_core::{JsRuntime, RuntimeOptions, v8};

fn run(js: &mut JsRuntime, code: &str) -> String {
    match js.execute_script("quiver:script", code.to_string()) {
        Ok(v) => {
            deno_core::scope!(scope, js);
            let l = v8::Local::new(scope, v);
            l.to_rust_string_lossy(scope)
        }
        Err(e) => format!("ERR {e:?}"),
    }
}

#[test]
fn probe() {
    let mut js = JsRuntime::new(RuntimeOptions::default());
    println!("{}", run(&mut js, "Reflect.ownKeys(globalThis).map(String).join(',')"));
    println!("{}", run(&mut js, "Reflect.ownKeys(Deno).map(String).join(',')"));
    println!("{}", run(&mut js, "Reflect.ownKeys(Error).map(String).join(',') + ' | ' + typeof Error.prepareStackTrace"));
    println!("{}", run(&mut js, "function f() { throw new Error('boom') }\ntry { f() } catch (e) { e.stack }"));
    println!("{}", run(&mut js, "\n\nlet x = ;"));
    println!("{}", run(&mut js, "\n\nnull.x"));
    println!("{}", run(&mut js, "typeof Function.prototype.caller"));
    println!("{}", run(&mut js, "Object.getOwnPropertyNames(Function.prototype).join(',')"));
    println!("{}", run(&mut js, "typeof Intl + typeof Iterator + typeof ShadowRealm + typeof Temporal"));
}

mod fake {
    use futures::future::{BoxFuture, FutureExt};
    use quiver_executor::{engine::HostBridge, worker::protocol::HostRequest};
    pub struct Echo;
    pub struct Fail;
    impl HostBridge for Fail {
        fn request(&self, _request: HostRequest) -> BoxFuture<'static, Result<serde_json::Value, String>> {
            async move { Err("upstream said no".to_string()) }.boxed()
        }
    }
    impl HostBridge for Echo {
        fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<serde_json::Value, String>> {
            async move { serde_json::to_value(request).map_err(|e| e.to_string()) }.boxed()
        }
    }
}

#[tokio::test]
async fn probe_engine() {
    use quiver_executor::{engine::ScriptRuntime, worker::protocol::Limits};
    use std::sync::Arc;
    let limits = Limits { wall_ms: 1000, ..Limits::default() };
    let tools = [("gh".to_string(), vec!["search".to_string()])].into();
    for code in [
        "const a = 1;\n\nfunction f() {\n  return null.field;\n}\ntry { return f(); } catch (e) { return e.stack }",
        "const a = 1;\n\nfunction f() {\n  const x = null;\n  return x.field;\n}\ntry { return f(); } catch (e) { return e.stack }",
        "const a = 1;\n\nfunction f() {\n  undefinedVar;\n}\ntry { return f(); } catch (e) { return e.stack }",
        "const a = 1;\n\nfunction f() {\n  throw new Error('x');\n}\ntry { return f(); } catch (e) { return e.stack }",
        "const a = 1;\n\nfunction f(o) {\n  return o.field.deeper;\n}\ntry { return f({}); } catch (e) { return e.stack }",
    ] {
        let rt = ScriptRuntime::new(limits.heap_bytes).unwrap();
        let out = rt.execute(code, &limits, &tools, Arc::new(fake::Fail)).await;
        println!("--- {code:?}\n{}", serde_json::to_string(&out).unwrap());
    }
    return;
    for code in [
        "return 1 + 1",
        "return Reflect.ownKeys(globalThis).map(String)",
        "return await tools.gh.search({q: 1})",
        "console.log('hi', {a: 1}, [1n]); return null",
        "\n\nthrow new Error('boom')",
        "\n\nlet x = ;",
        "\n\nnull.x",
        "const e = new Error('x'); return e.stack",
        "return eval('1')",
        "return Function('return 1')()",
        "return (async function(){}).constructor('return 1')",
        "return Object.getPrototypeOf(function*(){}).constructor('yield 1')",
        "return typeof Deno + typeof WebAssembly + typeof fetch + typeof SharedArrayBuffer",
        "Object.prototype.x = 1; return 1",
        "const o = {}; o.toString = () => 'x'; o.constructor = 5; return [String(o), o.constructor]",
        "class E extends Error { constructor(m) { super(m); this.name = 'E'; } } throw new E('custom')",
        "while (true) {}",
        "return 'x'.repeat(1e9).length",
        "const a = []; for (let i = 0; i < 1e8; i++) a.push(i); return a.length",
        "await new Promise(() => {})",
        "return import('data:text/javascript,export default 1')",
    ] {
        let rt = ScriptRuntime::new(limits.heap_bytes).unwrap();
        let t = std::time::Instant::now();
        let out = rt.execute(code, &limits, &tools, Arc::new(fake::Echo)).await;
        println!("--- {code:?} ({:?})\n{}", t.elapsed(), serde_json::to_string(&out).unwrap());
    }
}
