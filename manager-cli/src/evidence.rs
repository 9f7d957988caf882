//! What `verify --group-key` checks itself, trusting nothing the gateway says that it can
//! check: the checks of the verifier SDK (`dgsp_verifier::evidence`), so the CLI, the Rust,
//! Python and JavaScript SDKs and the verification page decide an answer the same way and
//! report the same check names.

pub use dgsp_verifier::evidence::*;
