//! Holds a served OpenAPI document against the router that serves it: the paths it lists are the
//! paths the router was built with, and on each path the methods it documents are exactly those
//! the router answers (any status but 405 counts as served).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Fetches the document at `base` + `document_path`, and fails the test unless its paths equal
/// `served_paths` and each path's documented methods equal the methods it serves. Every path
/// parameter is filled with a value that names nothing (a fresh UUID).
pub async fn assert_document_matches_routes(base: &str, document_path: &str, served_paths: Vec<String>) {
    let client = reqwest::Client::new();
    let answer = client.get(format!("{base}{document_path}")).send().await.expect("GET the document");
    assert_eq!(answer.status(), 200, "the document is served without credentials");
    assert_eq!(answer.headers()["content-type"], "application/json");
    let doc: Value = answer.json().await.expect("the document is JSON");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "OpenAPI 3.1: {}", doc["openapi"]);

    let documented: BTreeMap<String, BTreeSet<String>> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .map(|(path, item)| {
            let methods = METHODS.iter().filter(|m| item.get(**m).is_some()).map(|m| m.to_string()).collect();
            (path.clone(), methods)
        })
        .collect();
    let served: BTreeSet<String> = served_paths.into_iter().collect();
    let listed: BTreeSet<String> = documented.keys().cloned().collect();
    assert_eq!(listed, served, "documented paths (left) against the paths the router serves (right)");

    let filler = format!("{:032x}", rand::random::<u128>());
    for (path, methods) in &documented {
        let url = fill_parameters(path, &filler);
        for method in METHODS {
            let request = client.request(method.to_uppercase().parse().expect("method"), format!("{base}{url}"));
            let answer = request.send().await.expect("request");
            let status = answer.status().as_u16();
            let body = answer.text().await.unwrap_or_default();
            // A miss of the whole route table would be a 404 with no body; our 404s are JSON.
            assert!(!(status == 404 && body.is_empty()), "{method} {path}: not routed at all");
            assert_eq!(status != 405, methods.contains(method), "{method} {path} answered {status}: {body}");
        }
    }
}

/// `path` with every `{parameter}` replaced by `value`.
fn fill_parameters(path: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').map_or(rest.len(), |e| start + e + 1);
        out.push_str(value);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
