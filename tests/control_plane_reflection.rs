//! gRPC reflection on the control plane: a generic client (grpcurl, a
//! language's reflection client) lists the operator API and reads its schema,
//! the registry messages included; Raft stays unlisted.

use crate::support;

use futures::StreamExt as _;
use support::QuiverDev;
use tonic::transport::Endpoint;
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

#[tokio::test(flavor = "multi_thread")]
async fn reflection_lists_the_operator_api_and_describes_its_messages() {
    let dev = QuiverDev::start(&[]);
    let channel = Endpoint::from_shared(format!("http://{}", dev.control_plane))
        .unwrap()
        .connect()
        .await
        .expect("connect to the control plane");
    let ask = |message| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(message),
    };
    let requests = tokio_stream::iter(vec![
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(
            "quiver.v1.ControlPlane".into(),
        )),
    ]);
    let mut answers = ServerReflectionClient::new(channel)
        .server_reflection_info(requests)
        .await
        .expect("reflection answers")
        .into_inner();
    let mut next = async || {
        (answers.next().await)
            .expect("an answer")
            .expect("not a status")
            .message_response
    };
    let services = match next().await {
        Some(MessageResponse::ListServicesResponse(list)) => {
            list.service.into_iter().map(|s| s.name).collect::<Vec<_>>()
        }
        other => panic!("not a service list: {other:?}"),
    };
    assert!(
        services.iter().any(|s| s == "quiver.v1.ControlPlane"),
        "{services:?}"
    );
    assert!(!services.iter().any(|s| s.contains("Raft")), "{services:?}");
    let files = match next().await {
        Some(MessageResponse::FileDescriptorResponse(files)) => files.file_descriptor_proto,
        other => panic!("not a file descriptor: {other:?}"),
    };
    let text: Vec<String> = (files.iter())
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .collect();
    for file in ["quiver/v1/control_plane.proto", "quiver/v1/registry.proto"] {
        assert!(
            text.iter().any(|t| t.contains(file)),
            "the answer does not carry {file}"
        );
    }
}
