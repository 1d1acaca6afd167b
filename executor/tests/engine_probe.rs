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
