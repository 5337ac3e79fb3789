//! `GET /queue/v1/openapi.json`: served without a token, and it lists exactly the routes served.

use crate::helpers::spawn_app;

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
            }
        }
    }
}
