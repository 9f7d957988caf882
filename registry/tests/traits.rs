//! The core's protocol code, unchanged, over the registry's event-sourced PLM and revoked
//! list on RocksDB: join, issue, sign, verify, revoke, verify-as-revoked; every step is a
//! log entry and a rebuild reproduces the views.

use std::sync::Arc;

use dgsp_core::{Error, Manager, MemberKey, ParamSet, Plm, RevokedList, StoreError};
use dgsp_registry::store::Store;
use dgsp_registry::views::{RegistryPlm, RegistryRevokedList};
use dgsp_registry::writer::Writer;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn the_core_protocol_runs_on_the_registry_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let manager = Arc::new(Manager::generate(ParamSet::Sha2_128f, &mut rng));
    let (writer, thread) =
        Writer::start(store.clone(), manager.clone(), Default::default()).unwrap();
    let plm = RegistryPlm::new(store.clone(), writer.clone());
    let revoked = RegistryRevokedList::new(store.clone());

    let (id, cid_star) = manager.join(&plm, "alice").unwrap();
    assert!(matches!(
        manager.join(&plm, "alice"),
        Err(Error::Store(StoreError::DuplicateUsername(_)))
    ));
    let member = MemberKey::generate(ParamSet::Sha2_128f, id, cid_star, &mut rng);
    let items = member.csr(3, &mut rng);
    let pks: Vec<_> = items.iter().map(|i| *i.wots_pk()).collect();
    let certs = manager.issue(&plm, id, member.cid_star(), &pks).unwrap();
    assert_eq!(plm.member(id).unwrap().unwrap().counter, 3);
    let key = member
        .import(
            manager.public_key(),
            items.into_iter().next().unwrap(),
            &certs[0],
        )
        .unwrap();
    let sig = key.sign(b"on rocksdb");
    manager
        .public_key()
        .verify(b"on rocksdb", &sig, &revoked)
        .unwrap();

    let zetas = manager.revoke(&plm, &revoked, id).unwrap();
    assert_eq!(zetas.len(), 3);
    assert_eq!(revoked.len().unwrap(), 3);
    assert!(matches!(
        manager.public_key().verify(b"on rocksdb", &sig, &revoked),
        Err(Error::Revoked)
    ));
    assert!(
        manager.revoke(&plm, &revoked, id).is_ok(),
        "revoking again is idempotent"
    );
    assert!(matches!(
        manager.issue(&plm, id, member.cid_star(), &pks),
        Err(Error::Store(StoreError::Inactive(_)))
    ));
    // Zetas enter the list only through revocation entries.
    assert!(revoked.insert(&[dgsp_core::Zeta([1; 16])]).is_err());

    drop((plm, revoked, writer));
    thread.join().unwrap();
    let mut store = Arc::try_unwrap(store).ok().unwrap();
    store.verify_chain().unwrap();
    let live = store.dump_views().unwrap();
    store.rebuild(|_, _| {}).unwrap();
    assert_eq!(store.dump_views().unwrap(), live);
}
