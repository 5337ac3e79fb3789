//! The tabs of a queue's page. To add one, add a variant, its label and path here, a route in
//! `lib.rs` and a page module that renders `queue_header.html` with [`QueueNav::new`].

use aqs_control_plane::Queue;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Overview,
    Messages,
    Consumers,
    Tokens,
    DeadLetters,
    Push,
    Connect,
    Settings,
}

impl Tab {
    /// In the order they appear.
    pub const ALL: [Tab; 8] = [
        Tab::Overview,
        Tab::Messages,
        Tab::Consumers,
        Tab::Tokens,
        Tab::DeadLetters,
        Tab::Push,
        Tab::Connect,
        Tab::Settings,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Tab::Overview => "Overview",
            Tab::Messages => "Messages",
            Tab::Consumers => "Consumers",
            Tab::Tokens => "Tokens",
            Tab::DeadLetters => "Dead letters",
            Tab::Push => "Push",
            Tab::Connect => "Connect",
            Tab::Settings => "Settings",
        }
    }

    /// The path under `/queues/{slug}` ("" for the overview).
    pub fn path(self) -> &'static str {
        match self {
            Tab::Overview => "",
            Tab::Messages => "/messages",
            Tab::Consumers => "/consumers",
            Tab::Tokens => "/tokens",
            Tab::DeadLetters => "/dead-letters",
            Tab::Push => "/push",
            Tab::Connect => "/connect",
            Tab::Settings => "/settings",
        }
    }
}

pub(crate) struct TabLink {
    pub label: &'static str,
    pub href: String,
    pub current: bool,
}

/// The heading and tab bar of every queue page (`templates/queue_header.html`).
pub(crate) struct QueueNav {
    pub name: String,
    pub slug: String,
    pub address: String,
    pub paused: bool,
    pub tabs: Vec<TabLink>,
}

impl QueueNav {
    pub(crate) fn new(queue: &Queue, current: Tab) -> Self {
        let base = format!("/queues/{}", queue.slug);
        Self {
            name: queue.name.clone(),
            slug: queue.slug.to_string(),
            address: queue.address.clone(),
            paused: queue.paused,
            tabs: Tab::ALL
                .iter()
                .map(|&tab| TabLink {
                    label: tab.label(),
                    href: format!("{base}{}", tab.path()),
                    current: tab == current,
                })
                .collect(),
        }
    }

    /// The page title: "Tokens · image-jobs".
    pub(crate) fn title(&self, tab: Tab) -> String {
        format!("{} · {}", tab.label(), self.name)
    }
}
