//! Creating a queue: the address preview (live and without JavaScript) says when the name's slug
//! is taken, and what the queue will get instead; a name the member already uses is warned about,
//! never refused, before and after creating.

use super::support::{Visitor, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn a_taken_slug_and_a_duplicate_name_are_said_before_and_after_creating(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let mut bob = Visitor::new(&app);
    bob.sign_up("bob@example.com").await;

    let fresh = ada.get("/new/slug?name=Image%20jobs").await;
    assert!(fresh.body.ends_with("/queue/v1/image-jobs"), "a free slug is the address as it will be: {}", fresh.body);
    ada.create_queue("Image jobs", "5").await;

    // Bob's queue of that name cannot have that address: the preview says what it will be.
    let taken = bob.get("/new/slug?name=image%20JOBS").await;
    assert!(taken.body.contains("/queue/v1/image-jobs-???? (the address "), "{}", taken.body);
    assert!(taken.body.contains("/queue/v1/image-jobs is taken, so four random letters or digits are added"));
    assert!(!taken.body.contains("You already have"), "another member's name is not bob's: {}", taken.body);
    // The same without JavaScript: the "Preview address" button.
    bob.get("/new").await;
    let previewed = bob.post("/new", &[("name", "Image jobs"), ("intent", "preview")]).await;
    assert_eq!(previewed.status, 200, "{}", previewed.body);
    previewed.assert_contains("/queue/v1/image-jobs-???? (the address ");

    // Ada's second "Image jobs": warned in the preview, created all the same, warned again.
    let duplicate = ada.get("/new/slug?name=Image%20jobs").await;
    assert!(duplicate.body.contains("You already have a queue named “Image jobs” (at "), "{}", duplicate.body);
    let created = ada.create_queue("Image jobs", "5").await;
    created.assert_contains("id=\"same-name\"");
    created.assert_contains("You have other queues named “Image jobs”.");
    assert!(created.secret().is_some(), "created, with its token");
    let list = ada.get("/").await;
    assert!(list.body.matches("Image jobs").count() >= 2, "both queues are listed");
    // A queue with a name of its own gets no warning.
    ada.create_queue("Other", "5").await.assert_lacks("id=\"same-name\"");
}
