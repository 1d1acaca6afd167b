//! Stash keys that try to leave the session's own stash: path traversal,
//! control characters, sizes, prototype names, other sessions. The host's
//! stash sees each key as an opaque name in the adversary's own session (or
//! refuses it); the victim session's canary is checked after every case.

use quiver_executor::script::StashOp;
use serde_json::json;

use crate::sandbox_adversarial::adversarial::{
    case::{Case, FullPath::Runs, rejected, returns},
    recording_context::{HostCall, VICTIM_KEY, VICTIM_SESSION},
};

pub fn cases() -> Vec<Case> {
    const CONTROL: &str = "refused: stash keys cannot contain control characters";
    const LENGTH: &str = "refused: stash keys must be 1 to 256 bytes";
    let mut list: Vec<Case> = [
        ("stash dotdot", "'../../etc/passwd'", Runs, "../../etc/passwd".to_string(), json!(true), json!(1)),
        ("stash absolute", "'/etc/shadow'", Runs, "/etc/shadow".to_string(), json!(true), json!(1)),
        ("stash nul", "'a\\u0000b'", Runs, "a\u{0}b".to_string(), json!(CONTROL), json!(CONTROL)),
        ("stash huge key", "'k'.repeat(1e6)", Runs, "k".repeat(1_000_000), json!(LENGTH), json!(LENGTH)),
        ("stash proto key", "'__proto__'", rejected("proto"), "__proto__".to_string(), json!(true), json!(1)),
        ("stash constructor key", "'constructor'", rejected("constructor-chain"), "constructor".to_string(), json!(true), json!(1)),
        ("stash object key", "{ toString() { return 'x'; } }", Runs, "x".to_string(), json!(true), json!(1)),
        ("stash other session", "'session:other/key'", Runs, "session:other/key".to_string(), json!(true), json!(1)),
    ]
    .into_iter()
    .map(|(name, key, full_path, sent, set, got)| {
        Case::new(
            name,
            &format!(
                "const settle = (p) => p.then((v) => v, (e) => 'refused: ' + e.message);\nreturn [await settle(stash.set({key}, 1)), await settle(stash.get({key}))];"
            ),
            full_path,
            returns(json!([set, got])),
        )
        .reaching_host(vec![
            HostCall::Stash(StashOp::Set(sent.clone(), json!(1), None)),
            HostCall::Stash(StashOp::Get(sent)),
        ])
    })
    .collect();

    // Every spelling of the victim's session and key reads the adversary's
    // own (empty) stash.
    let spellings = [
        format!("{VICTIM_SESSION}/{VICTIM_KEY}"),
        format!("../victim/{VICTIM_KEY}"),
        format!("victim/{VICTIM_KEY}"),
        format!("/{VICTIM_SESSION}/{VICTIM_KEY}"),
        format!("{VICTIM_SESSION}:{VICTIM_KEY}"),
    ];
    let quoted: Vec<String> = spellings.iter().map(|k| format!("{k:?}")).collect();
    list.push(
        Case::new(
            "stash read another session",
            &format!(
                "const found = [];\nfor (const key of [{}]) found.push(await stash.get(key));\nfound.push(await stash.keys());\nreturn found;",
                quoted.join(", ")
            ),
            Runs,
            returns(json!([null, null, null, null, null, []])),
        )
        .reaching_host(
            spellings
                .iter()
                .map(|k| HostCall::Stash(StashOp::Get(k.clone())))
                .chain([HostCall::Stash(StashOp::Keys)])
                .collect(),
        ),
    );
    list.push(
        Case::new(
            "stash overwrite another session",
            &format!(
                "return [await stash.set({0:?}, 'overwritten'), await stash.delete({1:?}), await stash.keys()];",
                format!("../victim/{VICTIM_KEY}"),
                format!("{VICTIM_SESSION}/{VICTIM_KEY}"),
            ),
            Runs,
            returns(json!([true, false, [format!("../victim/{VICTIM_KEY}")]])),
        )
        .reaching_host(vec![
            HostCall::Stash(StashOp::Set(
                format!("../victim/{VICTIM_KEY}"),
                json!("overwritten"),
                None,
            )),
            HostCall::Stash(StashOp::Delete(format!("{VICTIM_SESSION}/{VICTIM_KEY}"))),
            HostCall::Stash(StashOp::Keys),
        ]),
    );
    list
}
