//! Request body limits both services apply, derived from what a body carries, so that a
//! client can tell before sending whether a body fits.
//!
//! A body that carries one signed message (a gateway's `/v1/verify` or `/v1/judge`, the
//! registry's `/admin/v1/open`) holds the message and the signature, each in standard base64
//! in JSON (raw in the gateway's binary form, which is smaller), plus a few short fields. Its
//! limit is [`signed_message_body_limit`]: the base64 length of the largest message accepted,
//! twice the largest signature encoding of all 24 parameter sets (its base64 is 4/3 of it;
//! the rest is room for JSON whitespace and escapes), and [`FRAMING`] bytes for field names
//! and the short fields.

use dgsp_core::{ParamSet, Signature};

/// The largest message a single verify, judge or open body carries by default: 1 MiB. A
/// larger message is verified offline (the SDKs and `dgsp-manager verify --group-key`
/// need no gateway), or sent in a batch, whose limit is the whole batch's.
pub const DEFAULT_MAX_MESSAGE: usize = 1 << 20;

/// Room in a signed-message body for field names, the member id and `pi` of a judge body,
/// and whitespace.
pub const FRAMING: usize = 1 << 10;

/// The largest signature encoding of all 24 parameter sets, header included (the `-256f`
/// sets: 52,084 bytes).
pub const LARGEST_SIGNATURE: usize = {
    let mut i = 0;
    let mut max = 0;
    while i < ParamSet::ALL.len() {
        let len = Signature::encoded_len(ParamSet::ALL[i]);
        if len > max {
            max = len;
        }
        i += 1;
    }
    max
};

/// Length of the standard base64 (padded) of `n` bytes.
pub const fn base64_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

/// The body limit of a request that carries one message of at most `max_message` bytes
/// and one signature: `base64_len(max_message) + 2 × LARGEST_SIGNATURE + FRAMING`
/// (1,503,296 bytes for the default 1 MiB message).
pub const fn signed_message_body_limit(max_message: usize) -> usize {
    base64_len(max_message)
        .saturating_add(2 * LARGEST_SIGNATURE)
        .saturating_add(FRAMING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_signature_fits_with_the_largest_message_in_json() {
        let largest = ParamSet::ALL
            .into_iter()
            .map(Signature::encoded_len)
            .max()
            .unwrap();
        assert_eq!(LARGEST_SIGNATURE, largest);
        assert_eq!(
            LARGEST_SIGNATURE,
            Signature::encoded_len(ParamSet::Shake256f)
        );
        assert_eq!(LARGEST_SIGNATURE, 52_084);
        assert_eq!(signed_message_body_limit(DEFAULT_MAX_MESSAGE), 1_503_296);
        let body = format!(
            "{{\"message\": \"{}\", \"signature\": \"{}\", \"id\": 18446744073709551615, \"pi\": \"{}\"}}",
            "A".repeat(base64_len(DEFAULT_MAX_MESSAGE)),
            "A".repeat(base64_len(LARGEST_SIGNATURE)),
            "A".repeat(base64_len(32)),
        );
        let limit = signed_message_body_limit(DEFAULT_MAX_MESSAGE);
        assert!(body.len() <= limit, "{} > {limit}", body.len());
        // About twice the signature beyond the message, not megabytes more.
        assert!(limit - base64_len(DEFAULT_MAX_MESSAGE) < 3 * LARGEST_SIGNATURE);
        assert_eq!(base64_len(0), 0);
        assert_eq!(base64_len(1), 4);
        assert_eq!(base64_len(3), 4);
        assert_eq!(base64_len(4), 8);
    }
}
