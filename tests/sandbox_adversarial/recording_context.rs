//! The host side of every adversarial execution: it answers like a real host
//! (one echo tool, a real `StashStore` with a victim session planted in it)
//! and records, in order, every request that reached it, so each case can say
//! exactly what an attack was allowed to send out of the sandbox.

use std::{
    collections::BTreeMap,
    fmt,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use quiver_executor::{
    ipc::HostError,
    script::{ScriptContext, StashOp},
    stash::StashStore,
};
use serde_json::{Value, json};

use super::canaries::Canaries;

/// The session every adversarial script runs as, in the stash's terms.
pub const ADVERSARY_SESSION: &str = "tenant/adversary";
/// Another session of the same tenant, holding the stash canary.
pub const VICTIM_SESSION: &str = "tenant/victim";
/// The victim's key.
pub const VICTIM_KEY: &str = "key";

/// One request as the host received it.
#[derive(Debug, Clone, PartialEq)]
pub enum HostCall {
    /// `tools.call(name, args)` or `tools.<server>.<tool>(args)`.
    Tool { name: String, args: Value },
    /// `search(query, limit)`.
    Search { query: String, limit: u32 },
    /// `describe(name)`.
    Describe { name: String },
    /// Any `stash.*` operation.
    Stash(StashOp),
}

impl HostCall {
    /// A call of the one tool the host offers.
    pub fn echo(args: Value) -> HostCall {
        HostCall::Tool {
            name: "demo__echo".into(),
            args,
        }
    }
}

impl fmt::Display for HostCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            HostCall::Tool { name, args } => format!("tool {name:?} {args}"),
            HostCall::Search { query, limit } => format!("search {query:?} limit {limit}"),
            HostCall::Describe { name } => format!("describe {name:?}"),
            HostCall::Stash(StashOp::Get(key)) => format!("stash get {key:?}"),
            HostCall::Stash(StashOp::Set(key, value, ttl)) => {
                format!("stash set {key:?} = {value} ttl {ttl:?}")
            }
            HostCall::Stash(StashOp::Delete(key)) => format!("stash delete {key:?}"),
            HostCall::Stash(StashOp::Keys) => "stash keys".to_string(),
        };
        f.write_str(&shortened(&text))
    }
}

/// `text` cut to a readable length (some cases send megabytes).
pub fn shortened(text: &str) -> String {
    const KEEP: usize = 240;
    if text.chars().count() <= KEEP {
        return text.to_string();
    }
    let head: String = text.chars().take(KEEP).collect();
    format!("{head}… ({} bytes in all)", text.len())
}

/// Records what reached the host and answers it.
pub struct RecordingContext {
    calls: Mutex<Vec<HostCall>>,
    stash: StashStore,
}

impl RecordingContext {
    /// A fresh host whose stash holds the victim's canary in another session.
    pub fn new(canaries: &Canaries) -> Arc<RecordingContext> {
        let stash = StashStore::default();
        stash
            .set(
                VICTIM_SESSION,
                VICTIM_KEY,
                json!(canaries.stash_secret),
                None,
            )
            .expect("plant the stash canary");
        Arc::new(RecordingContext {
            calls: Mutex::new(Vec::new()),
            stash,
        })
    }

    /// Every request that reached the host, in order.
    pub fn calls(&self) -> Vec<HostCall> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The victim's value as the host holds it now.
    pub fn victim_value(&self) -> Value {
        self.stash
            .get(VICTIM_SESSION, VICTIM_KEY)
            .unwrap_or(Value::Null)
    }

    fn record(&self, call: HostCall) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }
}

impl ScriptContext for RecordingContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        quiver_executor::script::names_in(
            &BTreeMap::from([("demo".to_string(), vec!["echo".to_string()])]),
            server,
        )
    }

    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        self.record(HostCall::Tool {
            name: name.clone(),
            args: args.clone(),
        });
        Box::pin(async move {
            if name == "demo__echo" || name == "demo.echo" {
                Ok(json!({ "echo": args }))
            } else {
                Err(format!("unknown tool `{name}`").into())
            }
        })
    }

    fn search(&self, query: String, limit: u32) -> BoxFuture<'_, Result<Value, HostError>> {
        self.record(HostCall::Search { query, limit });
        Box::pin(async { Ok(json!([{ "name": "demo__echo" }])) })
    }

    fn describe(&self, name: String) -> BoxFuture<'_, Result<Value, HostError>> {
        self.record(HostCall::Describe { name: name.clone() });
        Box::pin(async move {
            if name == "demo__echo" {
                Ok(json!(
                    "declare function echo(args: object): Promise<unknown>;"
                ))
            } else {
                Err(format!("unknown tool `{name}`").into())
            }
        })
    }

    fn stash(&self, op: StashOp) -> BoxFuture<'_, Result<Value, HostError>> {
        self.record(HostCall::Stash(op.clone()));
        let session = ADVERSARY_SESSION;
        let answer = match op {
            StashOp::Get(key) => self.stash.get(session, &key),
            StashOp::Set(key, value, ttl) => self.stash.set(session, &key, value, ttl),
            StashOp::Delete(key) => self.stash.delete(session, &key),
            StashOp::Keys => Ok(self.stash.keys(session)),
        };
        Box::pin(async move { answer.map_err(|e| HostError::from(e.to_string())) })
    }
}
