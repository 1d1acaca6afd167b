//! The fixture's prompts (simple, with arguments, with an embedded resource, with an
//! image) and the argument completion the suite asks for on them.

use rmcp::{
    ErrorData,
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptResult,
        JsonObject, Prompt, PromptArgument, PromptMessage, Reference, ResourceContents, Role,
    },
};
use serde_json::Value;

use crate::media;

pub const SIMPLE: &str = "test_simple_prompt";
pub const WITH_ARGUMENTS: &str = "test_prompt_with_arguments";
pub const WITH_EMBEDDED_RESOURCE: &str = "test_prompt_with_embedded_resource";
pub const WITH_IMAGE: &str = "test_prompt_with_image";

pub fn catalogue() -> Vec<Prompt> {
    let required = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(SIMPLE, Some("A simple prompt without arguments"), None),
        Prompt::new(
            WITH_ARGUMENTS,
            Some("A prompt that substitutes two arguments"),
            Some(vec![
                required("arg1", "First test argument"),
                required("arg2", "Second test argument"),
            ]),
        ),
        Prompt::new(
            WITH_EMBEDDED_RESOURCE,
            Some("A prompt that embeds a resource"),
            Some(vec![required(
                "resourceUri",
                "URI of the resource to embed",
            )]),
        ),
        Prompt::new(WITH_IMAGE, Some("A prompt that includes an image"), None),
    ]
}

pub fn get(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, ErrorData> {
    let argument = |key: &str| -> Result<&str, ErrorData> {
        arguments
            .and_then(|args| args.get(key))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("prompt `{name}` needs the string argument `{key}`"),
                    None,
                )
            })
    };
    let messages = match name {
        SIMPLE => vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )],
        WITH_ARGUMENTS => {
            let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
            vec![PromptMessage::new_text(
                Role::User,
                format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
            )]
        }
        WITH_EMBEDDED_RESOURCE => {
            let uri = argument("resourceUri")?;
            vec![
                PromptMessage::new(
                    Role::User,
                    ContentBlock::resource(ResourceContents::text(
                        "Embedded resource content for testing.",
                        uri,
                    )),
                ),
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ]
        }
        WITH_IMAGE => vec![
            PromptMessage::new(
                Role::User,
                ContentBlock::image(media::RED_PIXEL_PNG_BASE64, media::PNG_MIME),
            ),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ],
        other => {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt `{other}`"),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(messages))
}

/// Suggestions for prompt arguments and the resource template's `{id}`, filtered by
/// the typed prefix. Anything else completes to nothing, which is still a valid answer.
pub fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
        (Reference::Prompt(prompt), "arg1") if prompt.name == WITH_ARGUMENTS => {
            &["paris", "park", "party", "test", "testing"]
        }
        (Reference::Prompt(prompt), "arg2") if prompt.name == WITH_ARGUMENTS => {
            &["hello", "help", "world"]
        }
        (Reference::Resource(template), "id")
            if template.uri == crate::resources::DATA_TEMPLATE =>
        {
            &["1", "123", "42"]
        }
        _ => &[],
    };
    let prefix = request.argument.value.as_str();
    let values = candidates
        .iter()
        .filter(|candidate| candidate.starts_with(prefix))
        .map(|candidate| (*candidate).to_owned())
        .collect();
    let completion = CompletionInfo::with_all_values(values)
        .map_err(|e| ErrorData::internal_error(format!("building completions: {e}"), None))?;
    Ok(CompleteResult::new(completion))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ArgumentInfo;
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_are_substituted() {
        let args = json!({ "arg1": "testValue1", "arg2": "testValue2" });
        let result = get(WITH_ARGUMENTS, args.as_object()).expect("prompt renders");
        let wire = serde_json::to_string(&result).expect("serialize");
        assert!(wire.contains("testValue1") && wire.contains("testValue2"));
    }

    #[test]
    fn missing_arguments_and_unknown_prompts_are_invalid_params() {
        assert!(get(WITH_ARGUMENTS, None).is_err());
        assert!(get("no_such_prompt", None).is_err());
    }

    #[test]
    fn embedded_resource_prompt_uses_the_given_uri() {
        let args = json!({ "resourceUri": "test://example-resource" });
        let wire = serde_json::to_value(
            get(WITH_EMBEDDED_RESOURCE, args.as_object()).expect("prompt renders"),
        )
        .expect("serialize");
        assert_eq!(wire["messages"][0]["content"]["type"], json!("resource"));
        assert_eq!(
            wire["messages"][0]["content"]["resource"]["uri"],
            json!("test://example-resource")
        );
    }

    #[test]
    fn completion_filters_by_prefix_and_always_answers() {
        let request = CompleteRequestParams::new(
            Reference::for_prompt(WITH_ARGUMENTS),
            ArgumentInfo::new("arg1", "par"),
        );
        let result = complete(&request).expect("completes");
        assert_eq!(result.completion.values, vec!["paris", "park", "party"]);

        let request = CompleteRequestParams::new(
            Reference::for_prompt(SIMPLE),
            ArgumentInfo::new("anything", ""),
        );
        assert!(
            complete(&request)
                .expect("completes")
                .completion
                .values
                .is_empty()
        );
    }
}
