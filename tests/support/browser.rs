//! A real browser for the console's tests: Debian's headless Chromium
//! driven by its chromedriver over W3C WebDriver (plain JSON over HTTP).
//! Waits poll the page for a condition until a deadline, never a fixed
//! sleep; a wait that runs out fails with the page's text and leaves a
//! screenshot. Screenshots go to `target/console-screenshots/` (test
//! artefacts, not committed).

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use base64::Engine as _;
use serde_json::{Value, json};

/// How long a wait for the page lasts.
const WAIT: Duration = Duration::from_secs(20);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(100);

/// The W3C name of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One headless Chromium, through its own chromedriver.
pub struct Browser {
    driver: Child,
    base: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
    name: String,
}

/// Where screenshots are kept.
pub fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots")
}

/// What chromedriver answers `request`, as JSON.
async fn answer_of(request: reqwest::RequestBuilder) -> Value {
    request
        .send()
        .await
        .expect("chromedriver answers")
        .json()
        .await
        .expect("JSON")
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session; `name` prefixes
    /// the screenshots. Fails, naming the fix, when either is missing.
    pub async fn start(name: &str) -> Browser {
        let chromium = which("chromium").expect(
            "chromium is not installed: scripts/install-deps.sh installs Debian's chromium and chromium-driver",
        );
        let chromedriver = which("chromedriver").expect(
            "chromedriver is not installed: scripts/install-deps.sh installs Debian's chromium-driver",
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut command = Command::new(chromedriver);
        command
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let driver = command.spawn().expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let http = super::http();
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = match http.get(format!("{base}/status")).send().await {
                Ok(r) => r
                    .json::<Value>()
                    .await
                    .ok()
                    .is_some_and(|v| v["value"]["ready"] == true),
                Err(_) => false,
            };
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not become ready on {base}"
            );
            tokio::time::sleep(POLL).await;
        }
        let profile = tempfile::tempdir().expect("a profile directory");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        }}});
        let answer = answer_of(http.post(format!("{base}/session")).json(&capabilities)).await;
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {answer}"))
            .to_string();
        Browser {
            driver,
            base: format!("{base}/session/{session}"),
            http,
            _profile: profile,
            name: name.to_string(),
        }
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer_of(request).await["value"].clone()
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        let answer = self
            .command(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
        assert!(answer.get("error").is_none(), "open {url}: {answer}");
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        let answer = self
            .command(
                reqwest::Method::POST,
                "/execute/sync",
                Some(json!({ "script": script, "args": args })),
            )
            .await;
        assert!(
            !answer.is_object() || answer.get("error").is_none(),
            "script failed: {answer}"
        );
        answer
    }

    /// The visible text of the first element matching `css`, if there is
    /// one and it is shown.
    pub async fn text(&self, css: &str) -> Option<String> {
        self.script(
            "const e = document.querySelector(arguments[0]); return e && e.checkVisibility() ? (e.innerText ?? e.textContent) : null;",
            json!([css]),
        )
        .await
        .as_str()
        .map(str::to_string)
    }

    /// The visible texts of every element matching `css`.
    pub async fn texts(&self, css: &str) -> Vec<String> {
        let answer = self
            .script(
                "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.innerText);",
                json!([css]),
            )
            .await;
        serde_json::from_value(answer).unwrap_or_default()
    }

    /// The page's whole text.
    pub async fn page_text(&self) -> String {
        self.text("body").await.unwrap_or_default()
    }

    /// Waits until the first element matching `css` shows text satisfying
    /// `ok`; its text.
    pub async fn wait_for(&self, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(text) = self.text(css).await
                && ok(&text)
            {
                return text;
            }
            if Instant::now() > deadline {
                self.screenshot(&format!("failed-{}", what.replace(' ', "-")))
                    .await;
                panic!(
                    "waited {WAIT:?} for {what} ({css}); the page says:\n{}",
                    self.page_text().await
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until an element matches `css` and is shown; its text.
    pub async fn wait_until_present(&self, css: &str) -> String {
        self.wait_for(css, css, |_| true).await
    }

    /// Waits until `css` shows `expected` in its text.
    pub async fn wait_text(&self, css: &str, expected: &str) -> String {
        self.wait_for(css, expected, |t| t.contains(expected)).await
    }

    async fn element(&self, css: &str) -> String {
        self.wait_until_present(css).await;
        let answer = self
            .command(
                reqwest::Method::POST,
                "/element",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await;
        answer[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {answer}"))
            .to_string()
    }

    /// Makes the iframe matching `css` (waiting for it) the context of
    /// later commands, until [`Browser::leave_frame`].
    pub async fn enter_frame(&self, css: &str) {
        let mut element = serde_json::Map::new();
        element.insert(ELEMENT.into(), self.element(css).await.into());
        let answer = self
            .command(
                reqwest::Method::POST,
                "/frame",
                Some(json!({ "id": element })),
            )
            .await;
        assert!(
            !answer.is_object() || answer.get("error").is_none(),
            "enter frame {css}: {answer}"
        );
    }

    /// Back to the page from a frame [`Browser::enter_frame`] entered.
    pub async fn leave_frame(&self) {
        let answer = self
            .command(reqwest::Method::POST, "/frame/parent", Some(json!({})))
            .await;
        assert!(
            !answer.is_object() || answer.get("error").is_none(),
            "leave frame: {answer}"
        );
    }

    /// Clicks the first element matching `css` (waiting for it).
    pub async fn click(&self, css: &str) {
        let id = self.element(css).await;
        let answer = self
            .command(
                reqwest::Method::POST,
                &format!("/element/{id}/click"),
                Some(json!({})),
            )
            .await;
        assert!(
            answer.is_null() || answer.get("error").is_none(),
            "click {css}: {answer}"
        );
    }

    /// Replaces the value of the input matching `css` by typing `text`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{id}/clear"),
            Some(json!({})),
        )
        .await;
        let answer = self
            .command(
                reqwest::Method::POST,
                &format!("/element/{id}/value"),
                Some(json!({ "text": text })),
            )
            .await;
        assert!(
            answer.is_null() || answer.get("error").is_none(),
            "type into {css}: {answer}"
        );
    }

    /// Picks `value` in the select matching `css`, as a person would.
    pub async fn select(&self, css: &str, value: &str) {
        self.wait_until_present(css).await;
        self.script(
            "const s = document.querySelector(arguments[0]); s.value = arguments[1]; s.dispatchEvent(new Event('change'));",
            json!([css, value]),
        )
        .await;
    }

    /// Saves a screenshot as `<name>-<what>.png` under [`screenshot_dir`].
    pub async fn screenshot(&self, what: &str) -> PathBuf {
        let answer = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(answer.as_str().unwrap_or_default())
            .unwrap_or_default();
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot directory");
        let path = dir.join(format!("{}-{what}.png", self.name));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }

    /// Ends the session and the browser.
    pub async fn quit(mut self) {
        self.command(reqwest::Method::DELETE, "", None).await;
        self.stop_driver();
    }

    fn stop_driver(&mut self) {
        // The driver and the browsers it started share a process group.
        let group = self.driver.id() as i32;
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{group}")])
            .status();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if matches!(self.driver.try_wait(), Ok(None)) {
            self.stop_driver();
        }
    }
}
