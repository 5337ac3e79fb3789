//! `Chrome`: what the shared layout (`templates/base.html`) needs on every page: the title, the
//! member's email and the log-out form's CSRF token when someone is logged in, whether they are an
//! operator (a link to the operator page), the flash message, the asset addresses, the member's
//! teams for the switcher ([`TeamChoice`]), and, for a team's pages, what the member's role lets
//! them do there ([`Can`]) and the suspension banner.

use crate::assets;

pub(crate) struct Chrome {
    pub title: String,
    /// The logged-in member's email; `None` on the logged-out pages.
    pub member: Option<String>,
    /// The CSRF token every form on the page carries.
    pub csrf: String,
    pub flash: Option<String>,
    /// Shows the link to the operator page.
    pub operator: bool,
    /// The operator's reason while the team is suspended: every page shows it in a banner.
    pub suspended: Option<String>,
    /// Which of the team's forms the page shows (the handlers check again: this only hides).
    pub can: Can,
    /// The member's teams for the header's switcher, the one the pages act on marked.
    pub teams: Vec<TeamChoice>,
    pub css: &'static str,
    pub js: &'static str,
}

impl Chrome {
    pub(crate) fn new(title: impl Into<String>, member: Option<String>, csrf: String, flash: Option<String>) -> Self {
        Self {
            title: title.into(),
            member,
            csrf,
            flash,
            operator: false,
            suspended: None,
            can: Can::default(),
            teams: Vec::new(),
            css: assets::css_href(),
            js: assets::js_href(),
        }
    }

    /// Why a form of the team is not shown: the suspension, or the `role` it needs.
    pub(crate) fn needs(&self, role: &str) -> String {
        if self.suspended.is_some() {
            "The team is suspended: nothing here can be changed.".to_owned()
        } else {
            format!("This needs the {role} role or higher in this team.")
        }
    }

    /// For error pages: no member, no forms.
    pub(crate) fn bare(title: impl Into<String>) -> Self {
        Self::new(title, None, String::new(), None)
    }
}

/// One of the member's teams in the header's switcher.
pub(crate) struct TeamChoice {
    pub id: String,
    pub name: String,
    /// The team the pages act on now.
    pub current: bool,
}

/// What the member may do in the team the page belongs to, by their role (and nothing that changes
/// the team while it is suspended). Templates hide the buttons and forms of what is false; the
/// handlers refuse them regardless (`CurrentMember::may_change`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Can {
    /// Read message bodies (developer and above; a suspended team's too: reading is not a change).
    pub read_bodies: bool,
    /// Send, receive and settle messages in the console, mint and revoke tokens without `manage`.
    pub develop: bool,
    /// Queues, settings, push, hosts and domains, dead letters, purges, `manage` tokens.
    pub administer: bool,
    /// Billing.
    pub own: bool,
}
