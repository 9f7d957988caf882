//! The committed OpenAPI document must be what the code generates.

#[test]
fn committed_openapi_document_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../openapi/registry.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = dgsp_registry::api::openapi::document();
    assert!(
        committed == generated,
        "openapi/registry.json is stale: regenerate it with\n    ./scripts/openapi.sh"
    );
    // Every documented error is problem+json and every path has a tag.
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            assert!(op["tags"].is_array(), "{path} has no tag");
        }
    }
}
