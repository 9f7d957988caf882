//! The verification page: served from `--web-dir` at `/verify/` with the right content
//! types and a strict Content-Security-Policy (never framed, no sniffing), nothing outside
//! the directory, no symbolic link (in the directory, or as the directory), and no page (a
//! problem answer) without the option.

use crate::support;

use support::registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_from_its_directory_and_nothing_else() {
    let reg = registry().await;
    let web = tempfile::tempdir().unwrap();
    // The directory by a path without links (a temporary directory may sit below one).
    let dir = web.path().canonicalize().unwrap();
    std::fs::write(dir.join("index.html"), "<!doctype html><title>v</title>").unwrap();
    std::fs::write(dir.join("verifier_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(dir.join("page.js"), "export {}").unwrap();
    let secret = dir.parent().unwrap().join("dgsp-page-test-secret");
    std::fs::write(&secret, "not for the web").unwrap();
    // Links in the directory: to a file outside it, and to one of its own files.
    std::os::unix::fs::symlink(&secret, dir.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(dir.join("page.js"), dir.join("alias.js")).unwrap();
    let linked_dir = tempfile::tempdir().unwrap();
    let linked = linked_dir.path().canonicalize().unwrap().join("page");
    std::os::unix::fs::symlink(&dir, &linked).unwrap();
    let gw = reg.follower(|c| c.api.web_dir = Some(dir)).await;

    let get = |path: &str| {
        let url = format!("{}{path}", gw.url);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        async move { client.get(url).send().await.unwrap() }
    };
    let r = get("/verify/").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    for file in ["/verify/", "/verify/page.js", "/verify/verifier_bg.wasm"] {
        let r = get(file).await;
        let h = r.headers();
        let csp = h["content-security-policy"].to_str().unwrap();
        for directive in [
            "default-src 'none'",
            "script-src 'self' 'wasm-unsafe-eval'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{file}: {csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{file}: {csp}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{file}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{file}");
    }
    assert!(r.text().await.unwrap().contains("<title>v</title>"));
    let r = get("/verify/verifier_bg.wasm").await;
    assert_eq!(r.headers()["content-type"], "application/wasm");
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"\0asm\x01\0\0\0");
    let r = get("/verify/page.js").await;
    assert_eq!(
        r.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let r = get("/verify").await;
    assert_eq!(r.status(), 308);
    assert_eq!(r.headers()["location"], "/verify/");

    for path in [
        "/verify/..%2Fdgsp-page-test-secret",
        "/verify/%2e%2e%2fdgsp-page-test-secret",
        "/verify/../dgsp-page-test-secret",
        "/verify/missing.js",
        "/verify/.hidden",
        "/verify/leak.txt",
        "/verify/alias.js",
    ] {
        let r = get(path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(
            r.headers()["content-type"],
            "application/problem+json",
            "{path}"
        );
        assert!(!r.text().await.unwrap().contains("not for the web"));
    }
    let r = get("/verify/leak.txt").await;
    assert!(r.text().await.unwrap().contains("symbolic links"));
    gw.shutdown().await;

    // The directory reached through a link: nothing is served from it.
    let gw = reg.follower(|c| c.api.web_dir = Some(linked)).await;
    for path in ["/verify/", "/verify/page.js"] {
        let (status, body) = gw.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains("symbolic links"),
            "{body}"
        );
    }
    gw.shutdown().await;

    // Without --web-dir there is no page.
    let plain = reg.follower(|_| {}).await;
    let (status, body) = plain.get("/verify/").await;
    assert_eq!(status, 404);
    assert!(
        body["detail"].as_str().unwrap().contains("--web-dir"),
        "{body}"
    );
    plain.shutdown().await;
    reg.shutdown().await;
    let _ = std::fs::remove_file(secret);
}
