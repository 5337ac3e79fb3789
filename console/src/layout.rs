//! `Chrome`: what the shared layout (`templates/base.html`) needs on every page: the title, the
//! member's email and the log-out form's CSRF token when someone is logged in, whether they are an
//! operator (a link to the operator page), the flash message, and the asset addresses.

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
            css: assets::css_href(),
            js: assets::js_href(),
        }
    }

    /// For error pages: no member, no forms.
    pub(crate) fn bare(title: impl Into<String>) -> Self {
        Self::new(title, None, String::new(), None)
    }
}
