use deno_core::{JsRuntime, RuntimeOptions};

const BOOT: &str = include_str!("../src/engine/bootstrap.js");

#[test]
fn probe_bootstrap_cost() {
    std::thread::spawn(|| {
        let variants: Vec<(&str, String)> = vec![
            ("empty", "1".to_string()),
            ("full", BOOT.to_string()),
            ("no harden", BOOT.replace("for (const value of hiddenIntrinsics) harden(value);", "").replace("    harden(descriptor.value);\n    harden(descriptor.get);\n    harden(descriptor.set);", "").replace("!ObjectIsFrozen(Object.prototype) ||", "false &&")),
        ];
        for (name, src) in variants {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..40 {
                let mut js = JsRuntime::new(RuntimeOptions::default());
                let t = std::time::Instant::now();
                // ops missing: Deno.core.ops.op_quiver_* are undefined, fine for timing
                let r = js.execute_script("b", src.clone());
                total += t.elapsed();
                if let Err(e) = r { println!("{name}: {}", e.exception_message); break; }
            }
            println!("{name}: {:?} per run", total / 40);
        }
    }).join().unwrap();
}
