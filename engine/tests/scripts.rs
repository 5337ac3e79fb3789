//! Every script compiles: `SCRIPT LOAD` of the whole table against the test Redis, as a data-plane
//! process does at start.

use aqs_core::keys::Keys;
use aqs_engine::{Engine, Scripts};

#[tokio::test]
async fn every_script_loads() {
    let conn = aqs_core::redis_conn::connect(&[aqs_testkit::redis_url()]).await.expect("test Redis");
    let engine = Engine::new(conn, Keys::new(&aqs_testkit::namespace()));
    engine.load_scripts().await.expect("every script compiles");
    assert_eq!(engine.scripts().named().count(), Scripts::NAMES.len());
}
