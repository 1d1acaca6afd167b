//! The control plane's typed operator API: a generic client (grpcurl, a
//! language's reflection client) lists it and reads its schema, the registry
//! and admin messages included, and finds no JSON inside it; Raft stays
//! unlisted. A program calls it with the generated types alone, and the JSON
//! call of an older `quiver ctl` is refused with the fix.

use crate::support;

use futures::StreamExt as _;
use prost::Message as _;
use prost_types::{FileDescriptorProto, field_descriptor_proto::Type};
use quiver_proto::pb::{
    self, admin_answer::Answer, admin_request::Call, control_plane_client::ControlPlaneClient,
};
use support::QuiverDev;
use tonic::transport::{Channel, Endpoint};
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

async fn connect(dev: &QuiverDev) -> Channel {
    Endpoint::from_shared(format!("http://{}", dev.control_plane))
        .unwrap()
        .connect()
        .await
        .expect("connect to the control plane")
}

#[tokio::test(flavor = "multi_thread")]
async fn reflection_lists_the_operator_api_and_describes_its_messages() {
    let dev = QuiverDev::start(&[]);
    let channel = connect(&dev).await;
    let ask = |message| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(message),
    };
    // As grpcurl does: the service's file, then each file it imports by name.
    let requests = tokio_stream::iter(vec![
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(
            "quiver.v1.ControlPlane".into(),
        )),
        ask(MessageRequest::FileByFilename(
            "quiver/v1/admin.proto".into(),
        )),
        ask(MessageRequest::FileByFilename(
            "quiver/v1/registry.proto".into(),
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
    let mut files: Vec<FileDescriptorProto> = Vec::new();
    for _ in 0..3 {
        let sent = match next().await {
            Some(MessageResponse::FileDescriptorResponse(files)) => files.file_descriptor_proto,
            other => panic!("not a file descriptor: {other:?}"),
        };
        files.extend(sent.iter().map(|bytes| {
            FileDescriptorProto::decode(bytes.as_slice()).expect("a file descriptor")
        }));
    }
    let control_plane = files
        .iter()
        .find(|f| f.name() == "quiver/v1/control_plane.proto");
    for import in ["quiver/v1/registry.proto", "quiver/v1/admin.proto"] {
        assert!(
            control_plane.is_some_and(|f| f.dependency.iter().any(|d| d == import)),
            "control_plane.proto does not import {import}"
        );
    }
    for file in [
        "quiver/v1/control_plane.proto",
        "quiver/v1/registry.proto",
        "quiver/v1/admin.proto",
    ] {
        assert!(
            files.iter().any(|f| f.name() == file),
            "the answer does not carry {file}"
        );
    }
    // Every operation is a typed message of its own in one `oneof`.
    let admin = files.iter().find(|f| f.name() == "quiver/v1/admin.proto");
    let message = |name: &str| {
        (admin.unwrap().message_type.iter())
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("admin.proto has no {name}"))
    };
    for envelope in ["AdminRequest", "AdminAnswer"] {
        let fields = &message(envelope).field;
        assert_eq!(fields.len(), 41, "{envelope}: one field per operation");
        assert!(
            fields
                .iter()
                .all(|f| f.r#type() == Type::Message && f.oneof_index == Some(0)),
            "{envelope}: every operation is a message in one oneof"
        );
    }
    // No JSON text anywhere in the operator API and the registry, except
    // where the payload is JSON by nature.
    let by_nature = ["AuditRecord.arguments_json", "PendingDrift.proposed_json"];
    for file in files.iter().filter(|f| {
        ["control_plane.proto", "admin.proto", "registry.proto"]
            .iter()
            .any(|n| f.name().ends_with(n))
    }) {
        for m in &file.message_type {
            for f in &m.field {
                let name = format!("{}.{}", m.name(), f.name());
                assert!(
                    !(f.name().contains("json") && f.r#type() == Type::String)
                        || by_nature.contains(&name.as_str()),
                    "{} carries JSON text in {name}",
                    file.name()
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_calls_the_operator_api_with_the_generated_types_and_old_json_is_refused() {
    let dev = QuiverDev::start(&[]);
    let channel = connect(&dev).await;
    let mut client = ControlPlaneClient::new(channel.clone());
    let call = |call| pb::AdminCall {
        request: Some(pb::AdminRequest { call: Some(call) }),
    };
    let create = call(Call::TenantCreate(pb::TenantPatchRequest {
        id: "typed".into(),
        patch: Some(pb::TenantPatch {
            display_name: Some("Typed Co".into()),
            mode: Some("search".into()),
            ..Default::default()
        }),
    }));
    let created = client
        .admin(create)
        .await
        .expect("a typed create")
        .into_inner();
    assert!(
        matches!(created.answer.and_then(|a| a.answer), Some(Answer::TenantCreate(c)) if c.log_index > 0),
        "the answer is the create's own"
    );
    let shown = client
        .admin(call(Call::TenantShow(pb::Id { id: "typed".into() })))
        .await
        .expect("a typed show")
        .into_inner();
    let Some(Answer::TenantShow(tenant)) = shown.answer.and_then(|a| a.answer) else {
        panic!("not a tenant")
    };
    assert_eq!(tenant.display_name, "Typed Co");
    assert_eq!(tenant.mode(), pb::Mode::Search);

    // An unknown mode is refused with the valid ones, as from `quiver ctl`.
    let refused = client
        .admin(call(Call::TenantUpdate(pb::TenantPatchRequest {
            id: "typed".into(),
            patch: Some(pb::TenantPatch {
                mode: Some("turbo".into()),
                ..Default::default()
            }),
        })))
        .await
        .expect_err("an unknown mode");
    assert!(refused.message().contains("passthrough"), "{refused:?}");

    // What a `quiver ctl` before the typed API sent: the request as JSON in field 1.
    #[derive(Clone, PartialEq, prost::Message)]
    struct JsonAdminCall {
        #[prost(string, tag = "1")]
        request_json: String,
    }
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let refused = grpc
        .unary::<_, pb::AdminReply, _>(
            tonic::Request::new(JsonAdminCall {
                request_json: r#"{"format":1,"request":{"call":"tenant_list"}}"#.into(),
            }),
            tonic::codegen::http::uri::PathAndQuery::from_static("/quiver.v1.ControlPlane/Admin"),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .expect_err("an older ctl's call is refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused
            .message()
            .contains("`quiver ctl` of the cluster's release"),
        "the refusal names the fix: {refused:?}"
    );
}
