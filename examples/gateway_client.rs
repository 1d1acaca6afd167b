//! A service calling Quiver's gRPC API (`quiver.v1.Gateway`): lists the tools
//! its API key may use, searches them, calls one and runs a script, streaming
//! what the script's tools report.
//!
//! Run it against `quiver dev` with the built-in demo:
//!
//! ```sh
//! quiver dev --auth required --grpc-listen 127.0.0.1:7443 &
//! quiver ctl tenant create reports --server weather
//! export QUIVER_API_KEY=$(quiver ctl -o json key issue reports | jq -r .key)
//! cargo run --example gateway_client -- http://127.0.0.1:7443
//! ```
//!
//! The address defaults to `http://127.0.0.1:7443`. Without `QUIVER_API_KEY`
//! it calls anonymously, which only an edge with `auth = "none"` accepts.

use anyhow::Context as _;
use quiver_proto::pb::{
    DescribeRequest, GatewayCallToolRequest, GatewayExecuteRequest, ListToolsRequest,
    ScriptErrorKind, SearchToolsRequest, execute_event::Event, gateway_client::GatewayClient,
};
use tokio_stream::StreamExt;
use tonic::{Request, metadata::MetadataValue};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:7443".to_string());
    let authorization = match std::env::var("QUIVER_API_KEY") {
        Ok(key) => Some(
            MetadataValue::try_from(format!("Bearer {key}"))
                .context("QUIVER_API_KEY must be printable ASCII")?,
        ),
        Err(_) => None,
    };
    // Every request carries the key; the edge answers from that tenant's view.
    let authorize = |mut request: Request<()>| {
        if let Some(value) = &authorization {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    };
    let channel = tonic::transport::Endpoint::from_shared(address.clone())?
        .connect()
        .await
        .with_context(|| format!("connecting to {address}"))?;
    let mut gateway = GatewayClient::with_interceptor(channel, authorize);

    let listed = gateway
        .list_tools(ListToolsRequest {})
        .await
        .context("ListTools (an edge with auth = \"required\" needs QUIVER_API_KEY, from `quiver ctl key issue`)")?
        .into_inner();
    println!(
        "manifest v{}: {} tools",
        listed.manifest_version,
        listed.tools.len()
    );
    for tool in &listed.tools {
        println!("  {}", tool.signature);
    }

    let found = gateway
        .search_tools(SearchToolsRequest {
            query: "weather forecast for a city".into(),
            limit: 3,
        })
        .await?
        .into_inner();
    println!("search:");
    for hit in &found.results {
        println!("  {:.3} {} — {}", hit.score, hit.name, hit.summary);
    }
    let Some(best) = found.results.first() else {
        println!("nothing found; is the weather server in this key's view?");
        return Ok(());
    };

    let described = gateway
        .describe(DescribeRequest {
            names: vec![best.name.clone()],
        })
        .await?
        .into_inner();
    for tool in &described.tools {
        println!("{}", tool.declaration);
    }

    let called = gateway
        .call_tool(GatewayCallToolRequest {
            name: best.name.clone(),
            arguments_json: r#"{"city": "Lisbon"}"#.into(),
            timeout_ms: 10_000,
        })
        .await;
    match called {
        Ok(answer) => {
            let answer = answer.into_inner();
            let kind = if answer.is_error {
                "tool error"
            } else {
                "result"
            };
            println!("{kind}: {}", answer.result_json);
        }
        // NOT_FOUND, INVALID_ARGUMENT (with the schema check's message), …
        Err(status) => println!("refused ({:?}): {}", status.code(), status.message()),
    }

    let script = format!(
        "const cities = ['Lisbon', 'Oslo'];\n\
         const answers = await Promise.all(cities.map(city => tools.call('{}', {{city}})));\n\
         console.log(`asked about ${{cities.length}} cities`);\n\
         return answers.length;",
        best.name
    );
    let mut events = gateway
        .execute(GatewayExecuteRequest {
            code: script,
            ..Default::default()
        })
        .await?
        .into_inner();
    while let Some(event) = events.next().await {
        match event?.event {
            Some(Event::Log(log)) => println!("log ({:?}): {}", log.source(), log.message),
            Some(Event::Progress(p)) => println!("progress {} {}", p.progress, p.message),
            Some(Event::Result(result)) if result.error_kind() == ScriptErrorKind::Unspecified => {
                println!("script returned {}", result.value_json);
            }
            Some(Event::Result(result)) => {
                println!(
                    "script failed ({:?}): {}",
                    result.error_kind(),
                    result.error
                );
            }
            None => {}
        }
    }
    Ok(())
}
