//! The exact stub text of one small tool, so any change to the format shows up
//! in review. Update the expected text deliberately, never to make a test pass.

use quiver_proto::{
    StubHash, ToolDef,
    stub::{StubInput, render},
};
use serde_json::json;

fn create_issue() -> ToolDef {
    ToolDef {
        name: "create_issue".into(),
        title: None,
        description: "Create a new issue in a GitHub repository. The issue is opened immediately."
            .into(),
        input_schema: json!({
            "type": "object",
            "$defs": {
                "Label": {"type": "string", "description": "A label name", "maxLength": 50}
            },
            "properties": {
                "owner": {"type": "string", "description": "Repository owner"},
                "repo": {"type": "string", "description": "Repository name"},
                "title": {"type": "string"},
                "body": {"type": ["string", "null"], "description": "Markdown body */ of the issue"},
                "labels": {"type": "array", "items": {"$ref": "#/$defs/Label"}, "maxItems": 10},
                "priority": {"enum": ["low", "normal", "high"], "default": "normal"},
                "assignee": {
                    "type": "object",
                    "properties": {
                        "login": {"type": "string", "description": "GitHub login"},
                        "notify": {"type": "boolean", "default": true}
                    },
                    "required": ["login"]
                },
                "x-trace-id": {"type": "string", "format": "uuid"}
            },
            "required": ["owner", "repo", "title"]
        }),
        output_schema: None,
        annotations: Some(json!({"destructiveHint": false, "openWorldHint": true})),
        meta: None,
    }
}

#[test]
fn create_issue_stub_is_stable() {
    let def = create_issue();
    let stub = render(StubInput {
        server_js: "github",
        tool_js: "create_issue",
        exposed_name: "github__create_issue",
        def: &def,
    });
    let expected = r#"/**
 * Create a new issue in a GitHub repository. The issue is opened immediately.
 * Hints: open-world.
 * @param args.owner Repository owner
 * @param args.repo Repository name
 * @param args.assignee.login GitHub login
 * @param args.assignee.notify (default: true)
 * @param args.body Markdown body *\/ of the issue
 * @param args.labels (maxItems: 10)
 * @param args.priority (default: "normal")
 * @param args["x-trace-id"] (format: uuid)
 * @see tools.call("github__create_issue", args)
 */
declare namespace tools.github {
  function create_issue(args: {
    owner: string;
    repo: string;
    title: string;
    assignee?: { login: string; notify?: boolean };
    body?: string | null;
    labels?: string[];
    priority?: "low" | "normal" | "high";
    "x-trace-id"?: string;
  }): Promise<unknown>;
}
"#;
    assert_eq!(stub.declaration, expected);
    assert_eq!(
        stub.signature,
        r#"github.create_issue({owner: string, repo: string, title: string, assignee?: {…}, …})"#
    );
    assert_eq!(stub.summary, "Create a new issue in a GitHub repository.");
    // The hash every node must agree on for this declaration.
    assert_eq!(
        StubHash::of(stub.declaration.as_bytes()).to_hex(),
        "f91f7b5da8e9f0425b2525dea47f3307697a6917266fd3a37038d69b8f148111"
    );
}
