//! The page behind an invite link, `/invites/aqi_…`: which team it opens and with which role, and
//! the button that joins (a one-time form; the control plane spends the link in the joining
//! transaction, so it is used once however often it is sent). A visitor who is not logged in is
//! sent to log in or sign up and brought back here. A link that is unknown, used, withdrawn or
//! expired is a 404 page saying which.

use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::teams::invites;
use aqs_core::ApiError;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;

/// What a usable link offers.
struct Offer {
    secret: String,
    team: String,
    role: &'static str,
    /// Whom the invite was meant for: shown, not enforced (links are how teams share).
    email: String,
    expires: format::Instant,
    form_id: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "invite.html")]
struct InvitePage {
    chrome: Chrome,
    /// The offer, or why the link cannot be used.
    offer: Result<Offer, String>,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(secret): PagePath<String>,
) -> PageResult {
    match invites::preview(state.control(), &secret).await {
        Ok(preview) => {
            let chrome = member.chrome(format!("Join {}", preview.team_name));
            let offer = Offer {
                secret,
                team: preview.team_name,
                role: preview.role.as_str(),
                email: preview.email,
                expires: format::instant_at(&preview.expires_at),
                form_id: once::new_id(),
            };
            Ok(InvitePage { chrome, offer: Ok(offer) }.into_response())
        }
        Err(ApiError::NotFound(message) | ApiError::InvalidField { message, .. }) => {
            let page =
                InvitePage { chrome: member.chrome("Invite link"), offer: Err(crate::fields::sentence(&message)) };
            Ok((StatusCode::NOT_FOUND, page).into_response())
        }
        Err(err) => Err(err.into()),
    }
}

/// `POST /invites/{secret}`: the member joins; the console then works in the team they joined.
pub(crate) async fn accept(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(secret): PagePath<String>,
    form: FormData,
) -> PageResult {
    let act = async {
        match invites::accept(state.control(), &member.account, member.caller.origin.clone(), &secret).await {
            Ok(team) => {
                let message = format!("You joined {} as {}.", team.name, team.role.as_str());
                let response = super::team::switch_to(&state, &member, team.id.as_uuid(), "/team", &message);
                Ok(Outcome::answer("/team", response))
            }
            Err(err) => Ok(Outcome::refused(ConsoleError::from(err))),
        }
    };
    form::run(&state, &member, &form, act).await
}
