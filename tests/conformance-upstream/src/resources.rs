//! The fixture's resources: static text and binary resources, one subscribable
//! resource, and the `test://template/{id}/data` template the suite reads through.

use std::{
    collections::BTreeSet,
    sync::{Mutex, PoisonError},
};

use rmcp::{
    ErrorData,
    model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate},
};
use serde_json::json;

use crate::media;

pub const STATIC_TEXT: &str = "test://static-text";
pub const STATIC_BINARY: &str = "test://static-binary";
pub const WATCHED: &str = "test://watched-resource";
pub const DATA_TEMPLATE: &str = "test://template/{id}/data";

const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

pub fn catalogue() -> Vec<Resource> {
    vec![
        Resource::new(STATIC_TEXT, "static-text")
            .with_description("A static text resource")
            .with_mime_type("text/plain"),
        Resource::new(STATIC_BINARY, "static-binary")
            .with_description("A static binary resource (1x1 PNG)")
            .with_mime_type(media::PNG_MIME),
        Resource::new(WATCHED, "watched-resource")
            .with_description("A resource clients can subscribe to")
            .with_mime_type("text/plain"),
    ]
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(DATA_TEMPLATE, "template-data")
            .with_description("JSON data for the given id")
            .with_mime_type("application/json"),
    ]
}

pub fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        STATIC_TEXT => {
            ResourceContents::text("This is the content of the static text resource.", uri)
        }
        STATIC_BINARY => {
            ResourceContents::blob(media::RED_PIXEL_PNG_BASE64, uri).with_mime_type(media::PNG_MIME)
        }
        WATCHED => ResourceContents::text("This resource is watched for updates.", uri),
        _ => match template_id(uri) {
            Some(id) => ResourceContents::text(
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                    .to_string(),
                uri,
            )
            .with_mime_type("application/json"),
            None => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource at `{uri}`"),
                    Some(json!({ "uri": uri })),
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The `{id}` of a URI matching `test://template/{id}/data`; an id is one non-empty
/// path segment.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix(TEMPLATE_PREFIX)?
        .strip_suffix(TEMPLATE_SUFFIX)?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Records a subscription. Any readable URI may be subscribed to; the fixture never
/// changes its resources, so no `notifications/resources/updated` follow.
pub fn subscribe(subscriptions: &Mutex<BTreeSet<String>>, uri: String) -> Result<(), ErrorData> {
    read(&uri)?;
    subscriptions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(uri);
    Ok(())
}

pub fn unsubscribe(subscriptions: &Mutex<BTreeSet<String>>, uri: &str) {
    subscriptions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(uri);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_reads_substitute_the_id() {
        let result = read("test://template/123/data").expect("template matches");
        let wire = serde_json::to_value(&result).expect("serialize");
        let text = wire["contents"][0]["text"].as_str().expect("text content");
        assert!(text.contains("\"id\":\"123\""));
        assert_eq!(wire["contents"][0]["mimeType"], json!("application/json"));
    }

    #[test]
    fn template_rejects_empty_and_nested_ids() {
        assert_eq!(template_id("test://template//data"), None);
        assert_eq!(template_id("test://template/a/b/data"), None);
        assert_eq!(template_id("test://template/7/data"), Some("7"));
    }

    #[test]
    fn binary_resource_is_a_blob_with_a_mime_type() {
        let wire = serde_json::to_value(read(STATIC_BINARY).expect("readable")).expect("serialize");
        assert_eq!(wire["contents"][0]["mimeType"], json!("image/png"));
        assert!(
            wire["contents"][0]["blob"]
                .as_str()
                .is_some_and(|b| !b.is_empty())
        );
    }

    #[test]
    fn unknown_uris_are_not_found_and_cannot_be_subscribed() {
        let subscriptions = Mutex::default();
        assert!(read("test://nope").is_err());
        assert!(subscribe(&subscriptions, "test://nope".into()).is_err());
        subscribe(&subscriptions, WATCHED.into()).expect("watched resource subscribes");
        assert_eq!(subscriptions.lock().unwrap().len(), 1);
        unsubscribe(&subscriptions, WATCHED);
        assert!(subscriptions.lock().unwrap().is_empty());
    }
}
