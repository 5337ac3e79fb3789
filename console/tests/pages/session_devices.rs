//! The Account page's sessions say where each one logged in from: the browser and system read off
//! its user agent, and the client address.

use super::support::{Visitor, spawn_console};
use reqwest::header::{HeaderValue, USER_AGENT};
use sqlx::PgPool;

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

#[sqlx::test(migrations = "../migrations")]
async fn each_session_shows_its_device_and_address(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.headers.insert(USER_AGENT, HeaderValue::from_static(FIREFOX));
    ada.sign_up("ada@example.com").await;
    let mut phone = Visitor::new(&app);
    let android = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36";
    phone.headers.insert(USER_AGENT, HeaderValue::from_static(android));
    phone.get("/login").await;
    let logged_in = phone.post("/login", &[("email", "ada@example.com"), ("password", super::support::PASSWORD)]).await;
    assert_eq!(logged_in.status, 303, "{}", logged_in.body);

    let page = ada.get("/account").await;
    page.assert_contains("<th scope=\"col\">Device</th><th scope=\"col\">Address</th>");
    page.assert_contains(&format!("<span title=\"{FIREFOX}\">Firefox on Linux</span>"));
    page.assert_contains(">Chrome on Android</span>");
    assert_eq!(page.body.matches("<td data-label=\"Address\"><code>127.0.0.1</code></td>").count(), 2, "{}", page.body);

    // A password change ends every session and gives this browser a fresh one, still named.
    let form_id = page.input_value("form_id").unwrap();
    let changed = ada
        .post(
            "/account/password",
            &[
                ("current_password", super::support::PASSWORD),
                ("new_password", "another password"),
                ("form_id", &form_id),
            ],
        )
        .await;
    let page = ada.follow(changed).await;
    page.assert_contains("Password changed.");
    page.assert_contains(">Firefox on Linux</span>");
    page.assert_lacks("Chrome on Android");
    page.assert_lacks("Unknown device");
}
