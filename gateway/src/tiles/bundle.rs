//! Reading the snapshot bundle a checkpoint names, bounded by what its signed record
//! counts: the header (`dgsp_wire::snapshot_bundle::Header`, at most
//! [`MAX_HEADER_BYTES`](dgsp_wire::snapshot_bundle::MAX_HEADER_BYTES) and one chunk) is read
//! first and must verify (the manager's signature, the record the checkpoint names, a
//! declared count equal to the record's) before any zeta is read; the bundle's length is
//! then the header's and 16 bytes a signed zeta, and not one byte more is read. So whatever
//! serves the bundle, the gateway holds at most the bundle of the snapshot the checkpoint
//! names (and never more than [`MAX_SNAPSHOT_BUNDLE_BYTES`](super::MAX_SNAPSHOT_BUNDLE_BYTES)).

use std::sync::Arc;

use dgsp_core::checkpoint::SnapshotRef;
use dgsp_core::revocation::{RevocationSet, SignedSnapshot};
use dgsp_core::ManagerPublicKey;
use dgsp_wire::snapshot_bundle::{self, Header, SnapshotBundle};

use super::client::TileClient;
use super::MAX_SNAPSHOT_BUNDLE_BYTES;
use crate::follower::Fault;

/// The verified snapshot and set of the bundle `named` names, read from `client`
/// (`bad_snapshot_bundle` for anything wrong with it).
pub async fn read(
    client: &TileClient,
    group: Arc<ManagerPublicKey>,
    named: SnapshotRef,
) -> Result<(SignedSnapshot, RevocationSet), Fault> {
    let path = snapshot_bundle::path(named.number);
    let bad = |detail: String| Fault::BadSnapshotBundle {
        number: named.number,
        detail,
    };
    let bytes = client
        .within(&path, async {
            let (mut body, _) = client.open(&path).await?;
            let max = MAX_SNAPSHOT_BUNDLE_BYTES as u64;
            if let Some(n) = body.size().filter(|n| *n > max) {
                return Err(bad(format!(
                    "it is {n} bytes, over the {max} a bundle can be"
                )));
            }
            let mut buf = Vec::new();
            let header = loop {
                if let Some(h) = Header::decode(&buf).map_err(|e| bad(e.to_string()))? {
                    break h;
                }
                match body.chunk().await? {
                    Some(c) => buf.extend_from_slice(&c),
                    None => {
                        return Err(bad(format!(
                            "it ends inside its header ({} bytes)",
                            buf.len()
                        )))
                    }
                }
            };
            // Nothing after the header is read before it verifies.
            let checked = header.clone();
            let g = group.clone();
            tokio::task::spawn_blocking(move || checked.check(&g, &named))
                .await
                .map_err(|e| Fault::Storage(format!("snapshot bundle task: {e}")))?
                .map_err(|e| bad(e.to_string()))?;
            let len = header.bundle_len().filter(|n| *n <= max).ok_or_else(|| {
                bad(format!(
                    "its {} signed zetas are more than a bundle of {max} bytes holds",
                    header.count
                ))
            })?;
            if let Some(n) = body.size().filter(|n| *n != len) {
                return Err(bad(format!(
                    "it is {n} bytes, its signed count makes it {len}"
                )));
            }
            let len = len as usize;
            let more = |got: usize| {
                bad(format!(
                    "it holds more than the {len} bytes its signed count makes it ({got} and more)"
                ))
            };
            if buf.len() > len {
                return Err(more(buf.len()));
            }
            buf.reserve_exact(len - buf.len());
            while let Some(c) = body.chunk().await? {
                if buf.len() + c.len() > len {
                    return Err(more(buf.len() + c.len()));
                }
                buf.extend_from_slice(&c);
            }
            Ok(buf)
        })
        .await?;
    tokio::task::spawn_blocking(move || {
        let bundle = SnapshotBundle::decode(&bytes).map_err(|e| e.to_string())?;
        drop(bytes);
        let set = bundle.verify(&group, &named).map_err(|e| e.to_string())?;
        Ok::<_, String>((bundle.snapshot, set))
    })
    .await
    .map_err(|e| Fault::Storage(format!("snapshot bundle task: {e}")))?
    .map_err(bad)
}
