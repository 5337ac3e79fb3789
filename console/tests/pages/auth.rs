//! Sign up, log in, log out: the session cookie, field errors and redirects.

use super::support::{PASSWORD, Visitor, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn logged_out_visits_to_member_pages_redirect_to_log_in(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    let page = visitor.get("/").await;
    assert_eq!((page.status, page.location()), (303, "/login"));
    for path in ["/new", "/queues/anything", "/queues/anything/tokens", "/queues/anything/settings"] {
        let page = visitor.get(path).await;
        let back = form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>();
        assert_eq!((page.status, page.location()), (303, format!("/login?next={back}").as_str()), "{path}");
    }
    let page = visitor.get("/login").await;
    assert_eq!(page.status, 200);
    page.assert_contains("<h1>Log in</h1>");
    assert!(page.set_cookie("aqs_anon").is_some(), "the log-in form gets a CSRF binding");
}

#[sqlx::test(migrations = "../migrations")]
async fn sign_up_sets_the_session_cookie_and_shows_a_flash_once(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    let form = visitor.get("/signup").await;
    form.assert_contains("Create your account");
    form.assert_contains("<label for=\"email\">Email</label>");
    let answer = visitor.post("/signup", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    assert_eq!((answer.status, answer.location()), (303, "/"));
    let cookie = answer.set_cookie("aqs_session").expect("a session cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    assert!(answer.set_cookie("aqs_flash").is_some());

    let list = visitor.follow(answer).await;
    assert_eq!(list.status, 200);
    list.assert_contains("Welcome to AQS.");
    list.assert_contains("No queues yet");
    list.assert_contains("ada@example.com");
    assert!(list.set_cookie("aqs_flash").unwrap().contains("Max-Age=0"), "a shown flash is cleared");
    let again = visitor.get("/").await;
    again.assert_lacks("Welcome to AQS.");
}

#[sqlx::test(migrations = "../migrations")]
async fn cookies_are_secure_behind_a_tls_proxy(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    visitor.headers.insert("x-forwarded-proto", "https".parse().unwrap());
    let form = visitor.get("/signup").await;
    assert!(form.set_cookie("aqs_anon").unwrap().contains("; Secure"));
    let answer = visitor.post("/signup", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    assert!(answer.set_cookie("aqs_session").unwrap().contains("; Secure"));
}

#[sqlx::test(migrations = "../migrations")]
async fn sign_up_errors_are_shown_beside_their_field(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    visitor.get("/signup").await;

    let page = visitor.post("/signup", &[("email", "not-an-address"), ("password", PASSWORD)]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"email-error\">Give a valid email address");
    page.assert_contains("value=\"not-an-address\"");
    page.assert_contains("aria-invalid=\"true\"");

    let page = visitor.post("/signup", &[("email", "ada@example.com"), ("password", "short")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"password-error\">Use at least 8 characters.");

    let mut other = Visitor::new(&app);
    other.sign_up("ada@example.com").await;
    let page = visitor.post("/signup", &[("email", "Ada@Example.com"), ("password", PASSWORD)]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"email-error\">An account with this email already exists");
}

#[sqlx::test(migrations = "../migrations")]
async fn log_in_and_log_out(db: PgPool) {
    let app = spawn_console(db).await;
    Visitor::new(&app).sign_up("ada@example.com").await;

    let mut visitor = Visitor::new(&app);
    visitor.get("/login").await;
    let page = visitor.post("/login", &[("email", "ada@example.com"), ("password", "wrong password")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("role=\"alert\">Wrong email or password.");
    page.assert_contains("value=\"ada@example.com\"");

    let answer = visitor.post("/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    assert_eq!((answer.status, answer.location()), (303, "/"));
    let list = visitor.follow(answer).await;
    list.assert_contains("You are logged in.");
    assert_eq!(visitor.get("/login").await.location(), "/", "a member is sent to their queues");

    let answer = visitor.post("/logout", &[]).await;
    assert_eq!((answer.status, answer.location()), (303, "/login"));
    assert!(answer.set_cookie("aqs_session").unwrap().contains("Max-Age=0"));
    assert_eq!(visitor.cookie("aqs_session"), None);
    let login = visitor.follow(answer).await;
    login.assert_contains("You are logged out.");
    assert_eq!(visitor.get("/").await.location(), "/login");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_stale_session_cookie_is_dropped_at_log_in(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    visitor.set_cookie("aqs_session", "not.a.jwt");
    assert_eq!(visitor.get("/").await.location(), "/login");
    let page = visitor.get("/login").await;
    assert!(page.set_cookie("aqs_session").unwrap().contains("Max-Age=0"));
    Visitor::new(&app).sign_up("ada@example.com").await;
    let answer = visitor.post("/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    assert_eq!(answer.location(), "/", "the form's token matches after the stale cookie went: {}", answer.body);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_session_cookie_copied_before_log_out_is_refused_after_it(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_up("ada@example.com").await;
    visitor.create_queue("Jobs", "5").await;
    let copied = visitor.cookie("aqs_session").unwrap().to_owned();
    assert_eq!(visitor.get("/queues/jobs/tokens").await.status, 200);

    let answer = visitor.post("/logout", &[]).await;
    assert_eq!(answer.location(), "/login");

    let mut thief = Visitor::new(&app);
    thief.set_cookie("aqs_session", &copied);
    let page = thief.get("/queues/jobs/tokens").await;
    assert_eq!(
        (page.status, page.location()),
        (303, "/login?next=%2Fqueues%2Fjobs%2Ftokens"),
        "the ended session opens nothing"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn log_out_everywhere_ends_the_other_sessions(db: PgPool) {
    let app = spawn_console(db).await;
    let mut laptop = Visitor::new(&app);
    laptop.sign_up("ada@example.com").await;
    let mut phone = Visitor::new(&app);
    phone.get("/login").await;
    let answer = phone.post("/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    assert_eq!(answer.location(), "/");
    assert_eq!(phone.get("/").await.status, 200);

    // A link to a confirmation page, whose form does it: nothing ends on one click.
    let page = laptop.get("/").await;
    page.assert_contains("href=\"/logout-all\"");
    page.assert_lacks("action=\"/logout-all\"");
    let confirm = laptop.get("/logout-all").await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    confirm.assert_contains("Log out everywhere?");
    confirm.assert_contains("action=\"/logout-all\"");
    assert_eq!(phone.get("/").await.status, 200, "asking ends nothing");
    let form_id = confirm.input_value("form_id").unwrap();
    let answer = laptop.post("/logout-all", &[("form_id", &form_id)]).await;
    assert_eq!((answer.status, answer.location()), (303, "/login"));
    assert!(answer.set_cookie("aqs_session").unwrap().contains("Max-Age=0"));
    laptop.follow(answer).await.assert_contains("You are logged out everywhere.");

    assert_eq!(phone.get("/").await.location(), "/login", "the other browser's session ended too");
    assert_eq!(laptop.get("/").await.location(), "/login");
}

/// A visitor sent to log in who has no account yet signs up instead, and still lands on the page
/// they asked for; `next` is checked as log-in checks it.
#[sqlx::test(migrations = "../migrations")]
async fn sign_up_from_the_log_in_form_keeps_next_and_lands_there(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    let asked = ada.get("/new").await;
    assert_eq!(asked.location(), "/login?next=%2Fnew");
    ada.get(asked.location()).await.assert_contains("<a href=\"/signup?next=%2Fnew\">Create an account</a>");
    let form = ada.get("/signup?next=%2Fnew").await;
    form.assert_contains("name=\"next\" value=\"/new\"");
    form.assert_contains("<a href=\"/login?next=%2Fnew\">Log in</a>");

    // A refused sign-up keeps it for the next try.
    let short = ada.post("/signup", &[("email", "ada@example.com"), ("password", "short"), ("next", "/new")]).await;
    assert_eq!(short.status, 422);
    short.assert_contains("name=\"next\" value=\"/new\"");
    let answer = ada.post("/signup", &[("email", "ada@example.com"), ("password", PASSWORD), ("next", "/new")]).await;
    assert_eq!((answer.status, answer.location()), (303, "/new"));
    assert_eq!(ada.follow(answer).await.status, 200);

    for evil in ["https://evil.example.com/", "//evil.example.com/x", "/\\evil.example.com", "/login"] {
        let mut bea = Visitor::new(&app);
        let query = form_urlencoded::byte_serialize(evil.as_bytes()).collect::<String>();
        let form = bea.get(&format!("/signup?next={query}")).await;
        form.assert_lacks("name=\"next\"");
        form.assert_contains("<a href=\"/login\">Log in</a>");
        let email = aqs_testkit::unique("bea") + "@example.com";
        let answer = bea.post("/signup", &[("email", email.as_str()), ("password", PASSWORD), ("next", evil)]).await;
        assert_eq!((answer.status, answer.location()), (303, "/"), "{evil}");
    }
}
