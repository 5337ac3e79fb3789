//! A `User-Agent` as people read it: "Firefox on Linux", "Chrome on Android", "curl". Only the
//! common browsers and systems are named; anything else shows its first product token (an API
//! client's "reqwest/0.12"), and no user agent at all is "Unknown device".

/// The browser (or client) and the system of `user_agent`.
pub(crate) fn describe(user_agent: Option<&str>) -> String {
    let Some(ua) = user_agent.map(str::trim).filter(|ua| !ua.is_empty()) else {
        return "Unknown device".to_owned();
    };
    let browser = browser(ua);
    match (browser, system(ua)) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_owned(),
        (None, Some(s)) => format!("A browser on {s}"),
        (None, None) => ua.split_whitespace().next().unwrap_or(ua).chars().take(40).collect(),
    }
}

fn browser(ua: &str) -> Option<&'static str> {
    // Order matters: Edge and Opera also say Chrome, Chrome also says Safari.
    const BROWSERS: [(&str, &str); 9] = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("SamsungBrowser/", "Samsung Internet"),
        ("Firefox/", "Firefox"),
        ("HeadlessChrome/", "Headless Chrome"),
        ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"),
        ("CriOS/", "Chrome"),
        ("Safari/", "Safari"),
    ];
    if ua.starts_with("curl/") {
        return Some("curl");
    }
    BROWSERS.iter().find(|(marker, _)| ua.contains(marker)).map(|(_, name)| *name)
}

fn system(ua: &str) -> Option<&'static str> {
    const SYSTEMS: [(&str, &str); 8] = [
        ("Android", "Android"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("Windows", "Windows"),
        ("CrOS", "ChromeOS"),
        ("Mac OS X", "macOS"),
        ("Macintosh", "macOS"),
        ("Linux", "Linux"),
    ];
    SYSTEMS.iter().find(|(marker, _)| ua.contains(marker)).map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn common_browsers_and_systems_are_named() {
        let cases = [
            ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox on Linux"),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
                "Edge on Windows",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
                "Chrome on Android",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
                "Safari on iOS",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
                "Safari on macOS",
            ),
            ("curl/8.5.0", "curl"),
            ("reqwest/0.12 something", "reqwest/0.12"),
        ];
        for (ua, shown) in cases {
            assert_eq!(describe(Some(ua)), shown, "{ua}");
        }
        assert_eq!(describe(None), "Unknown device");
        assert_eq!(describe(Some("  ")), "Unknown device");
    }
}
