use deno_core::{JsRuntime, RuntimeOptions, v8};

fn try_new(heap: Option<usize>) -> Result<JsRuntime, String> {
    JsRuntime::try_new(RuntimeOptions {
        create_params: heap.map(|h| v8::CreateParams::default().heap_limits(0, h)),
        ..Default::default()
    })
    .map_err(|e| format!("{:?}", e))
}

#[test]
fn probe_many() {
    let n: usize = std::env::var("N").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
    let heap = std::env::var("HEAP").ok().and_then(|s| s.parse().ok());
    for i in 0..n {
        if let Err(e) = try_new(heap) {
            println!("failed at {i}: {e}");
            return;
        }
    }
    println!("{n} bare ok");
    for i in 0..n {
        if let Err(e) = try_new(Some(64 << 20)) {
            println!("limited failed at {i}: {e}");
            return;
        }
    }
    println!("{n} limited ok");
}

#[test]
fn probe_threads() {
    let mut total = 0;
    for t in 0..5 {
        let made = std::thread::spawn(move || {
            for i in 0..100 {
                if let Err(e) = try_new(None) {
                    println!("thread {t} failed at {i}: {e}");
                    return i;
                }
            }
            100
        })
        .join()
        .unwrap();
        total += made;
    }
    println!("threads made {total}");
}

#[test]
fn probe_script_runtimes_per_thread() {
    std::thread::spawn(|| {
        for i in 0..1000 {
            match quiver_executor::engine::ScriptRuntime::new(64 << 20) {
                Ok(rt) => drop(rt),
                Err(e) => {
                    println!("ScriptRuntime failed at {i}: {e}");
                    return;
                }
            }
        }
        println!("1000 ok");
    })
    .join()
    .unwrap();
}
