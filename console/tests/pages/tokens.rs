//! The Tokens tab: the list, minting (secret once), field errors, and revoking after confirmation.

use super::support::{Visitor, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn mint_list_and_revoke_a_token(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;

    let list = ada.get("/queues/jobs/tokens").await;
    list.assert_contains("<th scope=\"row\" data-label=\"Name\">default</th>");
    list.assert_contains("send, consume, manage");
    list.assert_contains("Never");

    let answer = ada.post("/queues/jobs/tokens", &[("name", "resize worker"), ("scopes", "consume")]).await;
    assert_eq!(answer.status, 303, "Post/Redirect/Get: {}", answer.body);
    let created = ada.follow(answer).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let secret = created.secret().expect("the new secret");
    created.assert_contains("Token “resize worker” created");
    created.assert_contains("never put it in browser code or source control.");
    created.assert_contains("Scopes: consume.");

    let list = ada.get("/queues/jobs/tokens").await;
    list.assert_lacks(&secret);
    list.assert_contains(&format!("acq_…{}", &secret[secret.len() - 4..]));
    let marker = "/revoke\">Revoke<span class=\"visually-hidden\"> resize worker";
    let at = list.body.find(marker).expect("a revoke link");
    let href_start = list.body[..at].rfind("href=\"").unwrap() + 6;
    let revoke_path = format!("{}/revoke", &list.body[href_start..at]);

    let confirm = ada.get(&revoke_path).await;
    assert_eq!(confirm.status, 200);
    confirm.assert_contains("Revoke the token “resize worker”?");
    confirm.assert_contains(&format!("action=\"{revoke_path}\""));
    let done = ada.post(&revoke_path, &[]).await;
    assert_eq!(done.location(), "/queues/jobs/tokens");
    let list = ada.follow(done).await;
    list.assert_contains("Token “resize worker” (…");
    list.assert_contains("revoked.");
    list.assert_contains("class=\"revoked\"");
    assert_eq!(ada.get(&format!("{revoke_path}x")).await.status, 404);
}

#[sqlx::test(migrations = "../migrations")]
async fn token_form_errors_are_shown_beside_their_field(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    ada.get("/queues/jobs/tokens").await;

    let page = ada.post("/queues/jobs/tokens", &[("name", "worker")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"scopes-error\">Give at least one of send, consume, manage.");
    page.assert_contains("value=\"worker\"");

    let page = ada.post("/queues/jobs/tokens", &[("name", " "), ("scopes", "send")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"token-name-error\">Use 1 to 64 characters.");

    let page = ada.post("/queues/jobs/tokens", &[("name", "x"), ("scopes", "admin")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"scopes-error\">Unknown scope");
}
