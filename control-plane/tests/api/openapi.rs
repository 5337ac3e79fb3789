//! `GET /api/v1/openapi.json`: served without a session, and it lists exactly the routes served.

use super::support::spawn_app;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn the_document_lists_every_route_served_and_no_other(db: PgPool) {
    let app = spawn_app(db).await;
    let served = aqs_control_plane::served_paths();
    assert!(served.iter().any(|p| p == "/api/v1/queues/{slug}"), "{served:?}");
    aqs_testkit::openapi::assert_document_matches_routes(&app.base, "/api/v1/openapi.json", served).await;
}

#[test]
fn every_operation_documents_its_errors_and_the_session_it_takes() {
    let doc = serde_json::to_value(aqs_control_plane::openapi_document()).unwrap();
    let open = [
        "/api/v1/auth/signup",
        "/api/v1/auth/login",
        "/api/v1/billing/webhook",
        "/api/v1/openapi.json",
        "/api/v1/invites/{secret}",
    ];
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            assert!(ids.insert(operation["operationId"].as_str().unwrap().to_owned()), "{method} {path}: id reused");
            let responses = operation["responses"].as_object().unwrap();
            for (status, response) in responses.iter().filter(|(status, _)| status.as_str() >= "400") {
                let schema = &response["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/Error", "{method} {path} {status}");
            }
            if open.contains(&path.as_str()) {
                assert!(operation.get("security").is_none(), "{method} {path} needs no session");
            } else if path.starts_with("/api/v1/admin/") {
                assert!(responses.contains_key("404"), "{method} {path}: operators only, 404 to others");
            } else {
                assert_eq!(operation["security"][0]["session"], serde_json::json!([]), "{method} {path}");
                assert!(responses.contains_key("401"), "{method} {path} lacks 401");
            }
        }
    }
}

/// Sign-up and log-in bodies say what the server checks: an email's shape, the password's length.
#[test]
fn credentials_state_the_email_shape_and_the_password_length() {
    let doc = serde_json::to_value(aqs_control_plane::openapi_document()).unwrap();
    for path in ["/api/v1/auth/signup", "/api/v1/auth/login"] {
        let body = &doc["paths"][path]["post"]["requestBody"];
        assert_eq!(body["required"], true, "{path}");
        assert_eq!(body["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Credentials", "{path}");
    }
    let credentials = &doc["components"]["schemas"]["Credentials"];
    let email = &credentials["properties"]["email"];
    assert_eq!((&email["format"], &email["maxLength"]), (&serde_json::json!("email"), &serde_json::json!(254)));
    assert!(email["pattern"].as_str().is_some_and(|p| p.starts_with('^') && p.ends_with('$')), "{email}");
    let password = &credentials["properties"]["password"];
    assert_eq!((&password["minLength"], &password["maxLength"]), (&serde_json::json!(8), &serde_json::json!(1024)));
}
