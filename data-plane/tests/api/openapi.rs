//! `GET /queue/v1/openapi.json`: served without a token, and it lists exactly the routes served.

use crate::helpers::spawn_app;
use serde_json::{Value, json};

#[tokio::test]
async fn the_document_lists_every_route_served_and_no_other() {
    let app = spawn_app().await;
    let served = aqs_data_plane::served_paths();
    assert!(served.iter().any(|p| p == "/queue/v1/{slug}/messages"), "{served:?}");
    aqs_testkit::openapi::assert_document_matches_routes(&app.base, "/queue/v1/openapi.json", served).await;
}

#[tokio::test]
async fn every_operation_documents_its_errors_and_the_token_it_takes() {
    let doc = serde_json::to_value(aqs_data_plane::openapi_document()).unwrap();
    let mut token_paths = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            let errors: Vec<&String> = responses.keys().filter(|status| status.as_str() >= "400").collect();
            for status in &errors {
                let schema = &responses[status.as_str()]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/Error", "{method} {path} {status}");
            }
            if path.starts_with("/queue/v1/{slug}") {
                assert_eq!(operation["security"][0]["queue_token"], serde_json::json!([]), "{method} {path}");
                for status in ["401", "403", "404", "429", "503"] {
                    assert!(responses.contains_key(status), "{method} {path} lacks {status}");
                }
                // A suspended team's token is refused on every route before its scope is looked at.
                let refused = responses["403"]["description"].as_str().unwrap_or_default();
                for code in ["`team_suspended`", "`forbidden`"] {
                    assert!(refused.contains(code), "{method} {path}: 403 lacks {code}: {refused}");
                }
                token_paths.insert(path.clone());
            }
        }
    }
    let served = aqs_data_plane::served_paths().into_iter().filter(|p| p.starts_with("/queue/v1/{slug}")).collect();
    assert_eq!(token_paths, served, "every route that takes a queue token was checked");
}

/// The document says what the routes accept: consume and purge take an empty body, publish takes
/// exactly one of `body` and `body_base64`, a dead-letter selection exactly one of its three forms.
#[tokio::test]
async fn request_bodies_say_what_is_optional_and_which_fields_are_alternatives() {
    let doc = serde_json::to_value(aqs_data_plane::openapi_document()).unwrap();
    for (path, what) in [("/queue/v1/{slug}/consume", "ConsumeRequest"), ("/queue/v1/{slug}/purge", "PurgeRequest")] {
        let body = &doc["paths"][path]["post"]["requestBody"];
        assert_eq!(body["required"], false, "{path}: an empty body is accepted: {body}");
        let schema = &body["content"]["application/json"]["schema"];
        assert_eq!(schema, &json!({"$ref": format!("#/components/schemas/{what}")}), "{path}: not JSON null");
    }
    let schemas = &doc["components"]["schemas"];
    let branches = |name: &str| -> Vec<Value> { schemas[name]["oneOf"].as_array().expect(name).clone() };

    let publish = branches("PublishRequest");
    let required: Vec<&Value> = publish.iter().map(|b| &b["required"]).collect();
    assert_eq!(required, [&json!(["body"]), &json!(["body_base64"])]);
    assert_eq!(publish[0]["properties"]["body_base64"]["type"], "null");
    assert_eq!(publish[1]["properties"]["body"]["type"], "null");
    assert_eq!(publish[1]["properties"]["body_base64"]["type"], "string");
    assert!(!schemas["PublishRequest"]["description"].to_string().contains("body_alternatives"), "no code in the text");
    for branch in &publish {
        assert!(branch["properties"]["content_type"].is_object(), "every branch keeps the other fields: {branch}");
    }

    let selection = branches("SelectionRequest");
    let required: Vec<&Value> = selection.iter().map(|b| &b["required"]).collect();
    assert_eq!(required, [&json!(["ids"]), &json!(["reason"]), &json!(["all"])]);
    assert_eq!(selection[0]["properties"]["all"]["enum"], json!([false, null]));
    assert_eq!(selection[0]["properties"]["ids"]["items"]["pattern"], "^[0-9a-f]{32}$");
    assert!(selection[0]["properties"]["ids"]["description"].is_string(), "a narrowed field keeps its description");
    assert_eq!(selection[1]["properties"]["all"]["type"], "null");
    assert_eq!(selection[2]["properties"]["all"]["enum"], json!([true]));
    for name in ["replay_dead_letters", "purge_dead_letters"] {
        let operation = doc["paths"].as_object().unwrap().values().flat_map(|item| item.as_object().unwrap().values());
        let found = operation.clone().find(|op| op["operationId"] == name).expect(name);
        assert_eq!(found["requestBody"]["required"], true, "{name}: a selection is required");
    }
}

/// What the document says of consume and purge is what they do: no body at all is taken.
#[tokio::test]
async fn consume_and_purge_take_no_body() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for (path, field) in [("/consume", "messages"), ("/purge", "purged")] {
        let response = app.client.post(app.url(&queue, path)).bearer_auth(&queue.token).send().await.unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::OK, "{path}");
        let body: Value = response.json().await.unwrap();
        assert!(!body[field].is_null(), "{path}: {body}");
    }
}
