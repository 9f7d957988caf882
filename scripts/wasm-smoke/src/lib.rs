//! Exports for the Node.js smoke test (`run.mjs`): verification only, no `sign` feature.

use dgsp_core::{InMemoryRevokedList, ManagerPublicKey, Signature};

/// Allocates `len` bytes in the module's memory for the host to fill (never freed: the
/// module lives for one test).
#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    Box::leak(vec![0u8; len].into_boxed_slice()).as_mut_ptr()
}

/// Borrows `len` bytes at `ptr` (as written by the host after [`alloc`]).
fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: the host passes a pointer from `alloc` and a length within that allocation.
    #[allow(unsafe_code)]
    unsafe {
        std::slice::from_raw_parts(ptr, len)
    }
}

/// Verifies an encoded group signature on `msg` under an encoded group public key, with an
/// empty revoked list: 1 valid, 0 invalid, 2 a key or signature that does not decode.
#[no_mangle]
pub extern "C" fn verify(
    pk: *const u8,
    pk_len: usize,
    msg: *const u8,
    msg_len: usize,
    sig: *const u8,
    sig_len: usize,
) -> u32 {
    let (Ok(pk), Ok(sig)) = (
        ManagerPublicKey::from_bytes(bytes(pk, pk_len)),
        Signature::from_bytes(bytes(sig, sig_len)),
    ) else {
        return 2;
    };
    let revoked = InMemoryRevokedList::new();
    pk.verify(bytes(msg, msg_len), &sig, &revoked).is_ok() as u32
}
