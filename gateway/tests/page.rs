//! The verification page: served from `--web-dir` at `/verify/` with the right content
//! types, nothing outside the directory, and no page (a problem answer) without the option.

mod support;

use support::registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_from_its_directory_and_nothing_else() {
    let reg = registry().await;
    let web = tempfile::tempdir().unwrap();
    std::fs::write(
        web.path().join("index.html"),
        "<!doctype html><title>v</title>",
    )
    .unwrap();
    std::fs::write(web.path().join("verifier_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(web.path().join("page.js"), "export {}").unwrap();
    let secret = web.path().parent().unwrap().join("dgsp-page-test-secret");
    std::fs::write(&secret, "not for the web").unwrap();
    let dir = web.path().to_owned();
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
