//! The verification page (`GET /verify/`): static files from the directory given with
//! `--web-dir` (the page of `sdk/js/page/` with the WebAssembly verifier beside it, as
//! `sdk/js/build.sh` assembles them). Nothing is fetched from elsewhere: the page checks the
//! gateway's answers in the browser with the verifier SDK.
//!
//! Only plain file names directly in the directory are served (letters, digits, `.`, `-`,
//! `_`; no leading dot, no path separators), so no request can leave it.

use std::path::PathBuf;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::Shared;
use dgsp_http::problem::Problem;

/// `GET /verify`: to the page.
pub async fn redirect() -> Redirect {
    Redirect::permanent("/verify/")
}

/// `GET /verify/`: the page.
pub async fn index(State(s): State<Shared>) -> Response {
    serve(&s, "index.html").await
}

/// `GET /verify/{file}`: a file of the page.
pub async fn file(State(s): State<Shared>, Path(name): Path<String>) -> Response {
    serve(&s, &name).await
}

fn not_found(detail: &str) -> Response {
    Problem::new(StatusCode::NOT_FOUND, "not-found", "No such file", detail).into_response()
}

async fn serve(s: &Shared, name: &str) -> Response {
    let Some(dir) = &s.config.web_dir else {
        return not_found("this gateway serves no verification page (start it with --web-dir)");
    };
    let Some(path) = resolve(dir, name) else {
        return not_found("no such file of the verification page");
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, content_type(name)),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            bytes,
        )
            .into_response(),
        Err(_) => not_found("no such file of the verification page"),
    }
}

/// The file `name` directly in `dir`, if `name` is a plain file name.
fn resolve(dir: &std::path::Path, name: &str) -> Option<PathBuf> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    plain.then(|| dir.join(name))
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ts") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_in_the_directory_are_served() {
        let dir = std::path::Path::new("/srv/page");
        assert_eq!(
            resolve(dir, "page.js"),
            Some(PathBuf::from("/srv/page/page.js"))
        );
        for bad in [
            "",
            "../secret",
            "a/b.js",
            ".hidden",
            "..",
            "a\\b",
            "x%2e%2e",
        ] {
            assert_eq!(resolve(dir, bad), None, "{bad}");
        }
        assert_eq!(
            content_type("dgsp_verifier_wasm_bg.wasm"),
            "application/wasm"
        );
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("noext"), "application/octet-stream");
    }
}
