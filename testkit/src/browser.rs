//! Headless Chromium driven over WebDriver (chromedriver), for the console's browser tests and the
//! end-to-end journey (feature `browser`): each [`Chromium`] is its own chromedriver on a free port
//! and a browser in a fresh profile, both ended when it drops, even after a panic. `AQS_CHROMIUM`
//! and `AQS_CHROMEDRIVER` name the binaries (default: Debian's `chromium` and `chromium-driver`,
//! which `infra/test` installs).

use fantoccini::{Client, ClientBuilder};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Chromium {
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

impl Chromium {
    /// A browser window of `width` × `height`, with JavaScript on or off (as some members browse).
    pub async fn launch(javascript: bool, width: u32, height: u32) -> Self {
        let chromium = std::env::var("AQS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let chromedriver = std::env::var("AQS_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        assert!(
            Path::new(&chromium).exists() && Path::new(&chromedriver).exists(),
            "{chromium} and {chromedriver} are needed (infra/test installs chromium and chromium-driver)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = std::env::temp_dir().join(format!("aqs-chromium-{:016x}", rand::random::<u64>()));
        std::fs::create_dir_all(&profile).unwrap();
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--no-first-run".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.display()),
        ];
        if !javascript {
            args.push("--blink-settings=scriptEnabled=false".into());
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), json!({ "binary": chromium, "args": args }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = loop {
            match ClientBuilder::new(connector.clone())
                .capabilities(capabilities.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => break client,
                Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(200)).await,
                Err(err) => panic!("cannot start a Chromium session through chromedriver: {err}"),
            }
        };
        Self { client, driver, profile }
    }

    /// Where screenshots go for review: `$AQS_TEST_OUTPUT/screenshots` (created).
    pub fn screenshots() -> PathBuf {
        let output = std::env::var("AQS_TEST_OUTPUT").unwrap_or_else(|_| "test-output".into());
        let folder = PathBuf::from(output).join("screenshots");
        std::fs::create_dir_all(&folder).unwrap();
        folder
    }
}

/// Ends the Chromium processes that use `profile`, found by their command line: a test that panics
/// never closes its session, and killing chromedriver leaves its browser running.
fn end_browser(profile: &Path) {
    let marker = format!("--user-data-dir={}", profile.display());
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).split('\0').any(|arg| arg == marker)
            && let Err(err) = Command::new("kill").args(["-9", &pid]).status()
        {
            eprintln!("cannot end browser process {pid}: {err}");
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        end_browser(&self.profile);
        if let Err(err) = self.driver.kill() {
            eprintln!("chromedriver already gone: {err}");
        }
        if let Err(err) = self.driver.wait() {
            eprintln!("cannot reap chromedriver: {err}");
        }
        if let Err(err) = std::fs::remove_dir_all(&self.profile) {
            eprintln!("cannot remove the browser profile: {err}");
        }
    }
}
