//! The committed OpenAPI document must be what the code generates, and must describe every
//! route the router serves.

#[test]
fn committed_openapi_document_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi/gateway.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = dgsp_gateway::api::openapi::document();
    assert!(
        committed == generated,
        "openapi/gateway.json is stale: regenerate it with\n    ./scripts/openapi.sh"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for route in [
        "/v1/verify",
        "/v1/verify/batch",
        "/v1/judge",
        "/v1/group",
        "/v1/checkpoint",
        "/v1/revocations/snapshot",
        "/v1/revocations/snapshots/{n}",
        "/v1/revocations/{zeta}/proof",
        "/healthz",
        "/readyz",
        "/metrics",
        "/witness/add-checkpoint",
    ] {
        assert!(paths.contains_key(route), "{route} is not documented");
    }
    for (path, item) in paths {
        for (_, op) in item.as_object().unwrap() {
            assert!(op["tags"].is_array(), "{path} has no tag");
        }
    }
}
