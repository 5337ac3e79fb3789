//! Tenancy between teams: a team the caller is not in is "not found" on every team route, whether
//! it is named in `AQS-Team` or reached by another team's ids and slugs (never 403, which would say
//! it exists), and nothing of it changes. Joining the team is what lets its queues be seen, and
//! only with the header. The routes are the role matrix's (`roles`), so a new route is covered here
//! as soon as it has its row there.

use super::roles::{TEAM_HEADER, call, furnish, join, served_rows, snapshot, spawn};
use aqs_control_plane::TeamRole;
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn another_teams_data_is_not_found_on_every_team_route(db: PgPool) {
    let (app, stripe, operator) = spawn(db).await;
    let ada = furnish(&app, &operator, "ada@example.com", "ada").await;
    let bob = furnish(&app, &operator, "bob@example.com", "bob").await;
    let before = snapshot(&app, &stripe, &bob).await;
    let rows = served_rows(&bob);
    let mut wrong = Vec::new();

    for row in &rows {
        // Ada names Bob's team.
        let reply = call(&app, &ada.owner, Some(&bob.id), row).await;
        if reply.status != 404 || reply.body["error"] != "not_found" {
            wrong.push(format!("AQS-Team of another team: {} answered {}: {}", row.name(), reply.status, reply.text));
        }
        // A header that is no team id at all.
        for header in ["not-a-team", "", "00000000-0000-0000-0000-00000000000g"] {
            let mut request = app.client.request(row.method.clone(), format!("{}{}", app.base, row.path));
            request = request.bearer_auth(&ada.owner).header(TEAM_HEADER, header);
            if let Some(body) = &row.body {
                request = request.json(body);
            }
            let reply = app.raw(request).await;
            if reply.status != 404 || reply.body["error"] != "not_found" {
                wrong.push(format!("AQS-Team {header:?}: {} answered {}: {}", row.name(), reply.status, reply.text));
            }
        }
        // Ada in her own team, with Bob's ids and slugs in the path.
        if row.route.contains('{') {
            let reply = call(&app, &ada.owner, None, row).await;
            if reply.status != 404 || reply.body["error"] != "not_found" {
                wrong.push(format!("another team's id: {} answered {}: {}", row.name(), reply.status, reply.text));
            }
        }
    }
    assert!(wrong.is_empty(), "{} calls reached another team:\n{}", wrong.len(), wrong.join("\n"));
    assert_eq!(snapshot(&app, &stripe, &bob).await, before, "Bob's team is as it was");
    eprintln!("tenancy: {} team routes, 5 ways each where they name an id", rows.len());

    // Ada's own team, named or not, is hers.
    let mine = app.raw(
        app.client.get(format!("{}/api/v1/queues", app.base)).bearer_auth(&ada.owner).header(TEAM_HEADER, &ada.id),
    );
    assert_eq!(mine.await.expect(200)["queues"].as_array().unwrap().len(), 2);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_member_sees_another_teams_queues_once_in_it_and_only_with_the_header(db: PgPool) {
    let (app, _stripe, operator) = spawn(db).await;
    let ada = furnish(&app, &operator, "ada@example.com", "ada").await;
    let bob = furnish(&app, &operator, "bob@example.com", "bob").await;
    let slugs = |body: serde_json::Value| -> Vec<String> {
        let mut slugs: Vec<String> =
            body["queues"].as_array().unwrap().iter().map(|q| q["slug"].as_str().unwrap().to_owned()).collect();
        slugs.sort();
        slugs
    };
    let list_in = |team: Option<&str>| {
        let mut request = app.client.get(format!("{}/api/v1/queues", app.base)).bearer_auth(&ada.owner);
        if let Some(team) = team {
            request = request.header(TEAM_HEADER, team);
        }
        app.raw(request)
    };
    list_in(Some(&bob.id)).await.expect_error(404, "not_found");

    join(&app, &bob.id, &ada.owner, TeamRole::Viewer).await;
    assert_eq!(slugs(list_in(Some(&bob.id)).await.expect(200)), [bob.doomed.clone(), bob.queue.clone()]);
    assert_eq!(slugs(list_in(None).await.expect(200)), [ada.doomed.clone(), ada.queue.clone()], "her own, without it");
    let teams_queue = format!("/api/v1/queues/{}", bob.queue);
    app.get(&ada.owner, &teams_queue).await.expect_error(404, "not_found");
    let named =
        app.client.get(format!("{}{teams_queue}", app.base)).bearer_auth(&ada.owner).header(TEAM_HEADER, &bob.id);
    assert_eq!(app.raw(named).await.expect(200)["queue"]["slug"], bob.queue.as_str());

    // In the team now, a change above her role is a 403 (the team's existence is no secret to her).
    let change = app
        .client
        .patch(format!("{}{teams_queue}", app.base))
        .bearer_auth(&ada.owner)
        .header(TEAM_HEADER, &bob.id)
        .json(&json!({"max_attempts": 1}));
    let message = app.raw(change).await.expect_error(403, "forbidden");
    assert!(message.contains("admin"), "{message}");
}
