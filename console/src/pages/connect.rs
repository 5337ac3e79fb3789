//! The Connect tab: copyable snippets that talk to this queue, its address filled in: curl (send,
//! receive, acknowledge), the TypeScript SDK (`sdk/typescript`, the npm package `aqs`), the
//! `aqs-worker` runner with a Worker queue handler, and the Rust client (`client/`, `aqs-client`),
//! each written against their current APIs, and links to the two OpenAPI documents. The token is
//! never on the page: every snippet reads `AQS_TOKEN` from the environment.

use super::load_queue;
use crate::error::PageResult;
use crate::extract::{CurrentMember, PagePath};
use crate::layout::Chrome;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::slug::Slug;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

#[derive(Template, WebTemplate)]
#[template(path = "connect.html")]
struct ConnectPage {
    chrome: Chrome,
    nav: QueueNav,
    /// The queue's address (`<origin>/queue/v1/<slug>`), as the curl snippets use it.
    address: String,
    /// The service's origin, as the SDKs take it.
    origin: String,
    slug: String,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    Ok(ConnectPage {
        chrome: member.chrome(format!("Connect · {}", queue.name)),
        nav: QueueNav::new(&queue, Tab::Connect),
        address: queue.address.clone(),
        origin: state.control().public_url().trim_end_matches('/').to_owned(),
        slug: queue.slug.to_string(),
    })
}
