//! The verification page (`GET /verify/`): static files from the directory given with
//! `--web-dir` (the page of `sdk/js/page/` with the WebAssembly verifier beside it, as
//! `sdk/js/build.sh` assembles them). Nothing is fetched from elsewhere: the page checks the
//! gateway's answers in the browser with the verifier SDK.
//!
//! Only plain file names directly in the directory are served (letters, digits, `.`, `-`,
//! `_`; no leading dot, no path separators), so no request can leave it; and only regular
//! files that are not symbolic links, in a directory reached through none ([`read_plain`]),
//! so a link placed in (or as) the directory cannot serve anything else either.
//!
//! Every file goes out with [`CONTENT_SECURITY_POLICY`], `X-Content-Type-Options: nosniff`
//! and `Referrer-Policy: no-referrer`.

use std::path::{Path as FsPath, PathBuf};

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

/// The page's Content-Security-Policy: scripts and styles from the page's own origin only
/// (no inline script, no `eval`; `'wasm-unsafe-eval'` lets the verifier's WebAssembly
/// module compile), requests to the same origin only (the gateway's API), nothing else
/// loaded, no `<base>`, no form posts, and never framed (`frame-ancestors 'none'`, against
/// clickjacking of the verdict).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn not_found(detail: &str) -> Response {
    Problem::new(StatusCode::NOT_FOUND, "not-found", "No such file", detail).into_response()
}

/// Why a file of the page is not served.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// Missing, unreadable, or not a regular file.
    NoFile,
    /// A symbolic link: the file, or the directory (or a directory above it).
    Link,
}

/// Reads `dir/name` (`name` a plain file name) unless a symbolic link is on the way: `dir`
/// must be its own canonical path (no link in it or above it), and the file a regular file,
/// not a link, which the file opened must still be (same device and inode), so a link
/// swapped in after the check is caught too.
fn read_plain(dir: &FsPath, name: &str) -> Result<Vec<u8>, Refused> {
    use std::io::Read;
    let absolute = std::path::absolute(dir).map_err(|_| Refused::NoFile)?;
    let canonical = std::fs::canonicalize(&absolute).map_err(|_| Refused::NoFile)?;
    if canonical != absolute {
        return Err(Refused::Link);
    }
    let path = canonical.join(name);
    let meta = std::fs::symlink_metadata(&path).map_err(|_| Refused::NoFile)?;
    if meta.file_type().is_symlink() {
        return Err(Refused::Link);
    }
    if !meta.is_file() {
        return Err(Refused::NoFile);
    }
    let mut file = std::fs::File::open(&path).map_err(|_| Refused::NoFile)?;
    let opened = file.metadata().map_err(|_| Refused::NoFile)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
            return Err(Refused::Link);
        }
    }
    if !opened.is_file() {
        return Err(Refused::NoFile);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).map_err(|_| Refused::NoFile)?;
    Ok(bytes)
}

async fn serve(s: &Shared, name: &str) -> Response {
    let Some(dir) = &s.config.web_dir else {
        return not_found("this gateway serves no verification page (start it with --web-dir)");
    };
    if resolve(dir, name).is_none() {
        return not_found("no such file of the verification page");
    }
    let (dir, owned) = (dir.clone(), name.to_owned());
    match tokio::task::spawn_blocking(move || read_plain(&dir, &owned)).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, content_type(name)),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
                (header::REFERRER_POLICY, "no-referrer"),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(Refused::Link)) => not_found(
            "no such file of the verification page (symbolic links in or to --web-dir are not served)",
        ),
        _ => not_found("no such file of the verification page"),
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

    #[cfg(unix)]
    #[test]
    fn symbolic_links_are_never_followed() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        // The base itself without links (a temporary directory may sit below one).
        let base = tmp.path().canonicalize().unwrap();
        let web = base.join("web");
        std::fs::create_dir(&web).unwrap();
        std::fs::write(web.join("page.js"), "export {}").unwrap();
        let secret = base.join("secret.txt");
        std::fs::write(&secret, "not for the web").unwrap();
        assert_eq!(read_plain(&web, "page.js").unwrap(), b"export {}");
        assert_eq!(read_plain(&web, "missing.js"), Err(Refused::NoFile));
        // A link inside the directory, to a file outside it or inside it.
        symlink(&secret, web.join("leak.txt")).unwrap();
        symlink(web.join("page.js"), web.join("alias.js")).unwrap();
        assert_eq!(read_plain(&web, "leak.txt"), Err(Refused::Link));
        assert_eq!(read_plain(&web, "alias.js"), Err(Refused::Link));
        // A directory is not a file.
        std::fs::create_dir(web.join("sub")).unwrap();
        assert_eq!(read_plain(&web, "sub"), Err(Refused::NoFile));
        // The directory itself reached through a link, or below one.
        let linked = base.join("linked");
        symlink(&web, &linked).unwrap();
        assert_eq!(read_plain(&linked, "page.js"), Err(Refused::Link));
        std::fs::create_dir(base.join("real")).unwrap();
        std::fs::create_dir(base.join("real/page")).unwrap();
        std::fs::write(base.join("real/page/page.js"), "x").unwrap();
        symlink(base.join("real"), base.join("via")).unwrap();
        assert_eq!(
            read_plain(&base.join("via/page"), "page.js"),
            Err(Refused::Link)
        );
        assert_eq!(
            read_plain(&base.join("real/page"), "page.js").unwrap(),
            b"x"
        );
    }
}
