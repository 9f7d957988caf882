//! Witness policies (`c2sp.org/tlog-policy`):
//!
//! ```text
//! log <vkey> [<url>]                      # the key name is the log's origin
//! witness <name> <vkey> [<url>]           # url: the witness's submission prefix
//! group <name> all|any|<k> <name>...      # members defined on earlier lines, each once
//! quorum <name>|none                      # exactly one
//! ```
//!
//! `#` starts a comment; blank lines are ignored; fields are separated by spaces or tabs.
//! Log keys are types `0x01` or `0x06`, witness keys `0x04` or `0x06`. Duplicate keys and
//! names are refused; at most [`MAX_ENTRIES`] logs, witnesses and groups each.
//!
//! A policy whose quorum cannot be carried by one witnessed note is refused
//! ([`PolicyErrorKind::QuorumTooLarge`]): the note of the longest origin and log line with
//! the cosignatures of the policy's cheapest quorum ([`Policy::cheapest_quorum`]) must fit
//! the signed-note limits ([`MAX_NOTE_BYTES`], [`MAX_SIGNATURES`] lines, the log's among
//! them). Twenty ML-DSA-44 cosignatures (3.3 KB each) do not fit in 64 KiB beside an ML-DSA-44 log line; 32 lines of
//! any kind do not fit beside the log's.

use std::collections::{BTreeMap, BTreeSet};

use super::cosignature::signature_line_len;
use super::signed_note::{MAX_NOTE_BYTES, MAX_SIGNATURES};
use super::vkey::{KeyKind, Vkey, VkeyError};

/// Most `log`, `witness` and `group` lines each.
pub const MAX_ENTRIES: usize = 32;

/// Largest policy text accepted, in bytes.
pub const MAX_POLICY_BYTES: usize = 256 * 1024;

/// A `log` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyLog {
    /// The log's key; its name is the log's origin.
    pub vkey: Vkey,
    /// Where the log is, if given.
    pub url: Option<String>,
}

/// A `witness` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyWitness {
    /// The policy's name for the witness (groups refer to it).
    pub name: String,
    /// The witness's cosigning key.
    pub vkey: Vkey,
    /// The witness's submission prefix, if given.
    pub url: Option<String>,
}

/// A `group` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyGroup {
    /// The group's name.
    pub name: String,
    /// How many members must be satisfied (1 ..= members).
    pub threshold: usize,
    /// Member names (witnesses or earlier groups).
    pub members: Vec<String>,
}

/// A parsed policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    logs: Vec<PolicyLog>,
    witnesses: Vec<PolicyWitness>,
    groups: Vec<PolicyGroup>,
    /// `None` for `quorum none`.
    quorum: Option<String>,
}

/// What is wrong with a policy line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyErrorKind {
    /// The policy text is over [`MAX_POLICY_BYTES`].
    #[error("policy over {MAX_POLICY_BYTES} bytes")]
    TooLarge,
    /// A keyword other than log, witness, group, quorum.
    #[error("unknown keyword {0:?}")]
    UnknownKeyword(String),
    /// Too few or too many fields.
    #[error("wrong number of fields")]
    Fields,
    /// A bad verifier key.
    #[error("bad verifier key: {0}")]
    Vkey(VkeyError),
    /// A log key that is not `0x01` or `0x06`, or a witness key not `0x04` or `0x06`.
    #[error("key type 0x{0:02x} not allowed here")]
    KeyType(u8),
    /// A key listed twice.
    #[error("duplicate key")]
    DuplicateKey,
    /// A witness or group name used twice, or a reserved name (`none`, `all`, `any`).
    #[error("duplicate or reserved name {0:?}")]
    DuplicateName(String),
    /// A group member or quorum naming nothing defined before.
    #[error("undefined name {0:?}")]
    UndefinedName(String),
    /// A member listed twice in one group.
    #[error("member {0:?} listed twice")]
    DuplicateMember(String),
    /// A threshold that is not `all`, `any` or 1 ..= members.
    #[error("bad threshold {0:?}")]
    Threshold(String),
    /// More than [`MAX_ENTRIES`] logs, witnesses or groups.
    #[error("more than {MAX_ENTRIES} entries of one kind")]
    TooMany,
    /// A second `quorum` line.
    #[error("second quorum line")]
    SecondQuorum,
    /// No `quorum` line (reported with the line count).
    #[error("no quorum line")]
    NoQuorum,
    /// No `log` line (reported with the line count).
    #[error("no log line")]
    NoLog,
    /// The cheapest quorum's cosignatures do not fit in one witnessed note (reported at the
    /// `quorum` line).
    #[error(
        "the quorum needs a witnessed note of {lines} signature lines and up to {bytes} bytes, \
         over the signed-note limits ({MAX_SIGNATURES} lines, {MAX_NOTE_BYTES} bytes)"
    )]
    QuorumTooLarge {
        /// Signature lines of the note (the log's and the cosignatures).
        lines: usize,
        /// Its largest size in bytes.
        bytes: usize,
    },
}

/// A policy refused, with the line (from 1) that was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy line {line}: {kind}")]
pub struct PolicyError {
    /// Line number, from 1 (for `NoQuorum`/`NoLog`: the number of lines).
    pub line: usize,
    /// What is wrong.
    pub kind: PolicyErrorKind,
}

fn same_key(a: &Vkey, b: &Vkey) -> bool {
    (a.name == b.name && a.key_id == b.key_id) || a.kind == b.kind
}

impl Policy {
    /// Parses a policy text.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let err = |line: usize, kind| PolicyError { line, kind };
        if text.len() > MAX_POLICY_BYTES {
            return Err(err(0, PolicyErrorKind::TooLarge));
        }
        let mut p = Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        };
        let mut quorum_line: Option<(usize, String)> = None;
        // Witness and group names, in one namespace.
        let mut names = BTreeSet::new();
        let mut lines = 0;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            lines = n;
            let line = raw.split_once('#').map_or(raw, |(l, _)| l);
            let f: Vec<&str> = line.split([' ', '\t']).filter(|s| !s.is_empty()).collect();
            let Some((&keyword, args)) = f.split_first() else {
                continue;
            };
            match keyword {
                "log" => {
                    if args.is_empty() || args.len() > 2 {
                        return Err(err(n, PolicyErrorKind::Fields));
                    }
                    let vkey =
                        Vkey::parse(args[0]).map_err(|e| err(n, PolicyErrorKind::Vkey(e)))?;
                    if matches!(vkey.kind, KeyKind::Ed25519Cosignature(_)) {
                        return Err(err(n, PolicyErrorKind::KeyType(vkey.kind.type_byte())));
                    }
                    if p.logs.iter().any(|l| same_key(&l.vkey, &vkey)) {
                        return Err(err(n, PolicyErrorKind::DuplicateKey));
                    }
                    if p.logs.len() == MAX_ENTRIES {
                        return Err(err(n, PolicyErrorKind::TooMany));
                    }
                    p.logs.push(PolicyLog {
                        vkey,
                        url: args.get(1).map(|u| (*u).to_owned()),
                    });
                }
                "witness" => {
                    if args.len() < 2 || args.len() > 3 {
                        return Err(err(n, PolicyErrorKind::Fields));
                    }
                    let name = args[0];
                    let vkey =
                        Vkey::parse(args[1]).map_err(|e| err(n, PolicyErrorKind::Vkey(e)))?;
                    if matches!(vkey.kind, KeyKind::Ed25519(_)) {
                        return Err(err(n, PolicyErrorKind::KeyType(vkey.kind.type_byte())));
                    }
                    if p.witnesses.iter().any(|w| same_key(&w.vkey, &vkey)) {
                        return Err(err(n, PolicyErrorKind::DuplicateKey));
                    }
                    if is_reserved(name) || !names.insert(name.to_owned()) {
                        return Err(err(n, PolicyErrorKind::DuplicateName(name.to_owned())));
                    }
                    if p.witnesses.len() == MAX_ENTRIES {
                        return Err(err(n, PolicyErrorKind::TooMany));
                    }
                    p.witnesses.push(PolicyWitness {
                        name: name.to_owned(),
                        vkey,
                        url: args.get(2).map(|u| (*u).to_owned()),
                    });
                }
                "group" => {
                    if args.len() < 3 {
                        return Err(err(n, PolicyErrorKind::Fields));
                    }
                    let (name, k, members) = (args[0], args[1], &args[2..]);
                    let mut seen = BTreeSet::new();
                    for m in members {
                        if !names.contains(*m) {
                            return Err(err(n, PolicyErrorKind::UndefinedName((*m).to_owned())));
                        }
                        if !seen.insert(*m) {
                            return Err(err(n, PolicyErrorKind::DuplicateMember((*m).to_owned())));
                        }
                    }
                    let threshold = match k {
                        "all" => members.len(),
                        "any" => 1,
                        k => super::checkpoint_body::parse_decimal(k)
                            .and_then(|k| usize::try_from(k).ok())
                            .filter(|k| (1..=members.len()).contains(k))
                            .ok_or_else(|| err(n, PolicyErrorKind::Threshold(k.to_owned())))?,
                    };
                    if is_reserved(name) || !names.insert(name.to_owned()) {
                        return Err(err(n, PolicyErrorKind::DuplicateName(name.to_owned())));
                    }
                    if p.groups.len() == MAX_ENTRIES {
                        return Err(err(n, PolicyErrorKind::TooMany));
                    }
                    p.groups.push(PolicyGroup {
                        name: name.to_owned(),
                        threshold,
                        members: members.iter().map(|m| (*m).to_owned()).collect(),
                    });
                }
                "quorum" => {
                    if args.len() != 1 {
                        return Err(err(n, PolicyErrorKind::Fields));
                    }
                    if quorum_line.is_some() {
                        return Err(err(n, PolicyErrorKind::SecondQuorum));
                    }
                    quorum_line = Some((n, args[0].to_owned()));
                }
                other => return Err(err(n, PolicyErrorKind::UnknownKeyword(other.to_owned()))),
            }
        }
        let (qn, q) = quorum_line.ok_or(err(lines, PolicyErrorKind::NoQuorum))?;
        if q != "none" {
            if !names.contains(&q) {
                return Err(err(qn, PolicyErrorKind::UndefinedName(q)));
            }
            p.quorum = Some(q);
        }
        if p.logs.is_empty() {
            return Err(err(lines, PolicyErrorKind::NoLog));
        }
        let all: BTreeSet<String> = p.witnesses.iter().map(|w| w.name.clone()).collect();
        // Every component can be met with all witnesses (thresholds are at most the
        // members), so the cheapest quorum exists.
        let cheapest = p.cheapest_quorum(&all).unwrap_or_default();
        let (lines, bytes) = p.note_len(&cheapest);
        if lines > MAX_SIGNATURES || bytes > MAX_NOTE_BYTES {
            return Err(err(qn, PolicyErrorKind::QuorumTooLarge { lines, bytes }));
        }
        Ok(p)
    }

    /// The signature lines and the most bytes of a witnessed note of any of the policy's
    /// logs cosigned by the witnesses `cosigners` (policy names; other names count
    /// nothing): the body (origin, a 20-digit size, the root), the blank line, the log's
    /// line and one line per cosigner.
    pub fn note_len(&self, cosigners: &BTreeSet<String>) -> (usize, usize) {
        let log_part = self
            .logs
            .iter()
            .map(|l| l.vkey.name.len() + 1 + 20 + 1 + 44 + 1 + 1 + signature_line_len(&l.vkey))
            .max()
            .unwrap_or(0);
        let counted: Vec<&PolicyWitness> = self
            .witnesses
            .iter()
            .filter(|w| cosigners.contains(&w.name))
            .collect();
        let bytes = log_part
            + counted
                .iter()
                .map(|w| signature_line_len(&w.vkey))
                .sum::<usize>();
        (1 + counted.len(), bytes)
    }

    /// Whether a witnessed note cosigned by `cosigners` fits the signed-note limits
    /// ([`Policy::note_len`]).
    pub fn note_fits(&self, cosigners: &BTreeSet<String>) -> bool {
        let (lines, bytes) = self.note_len(cosigners);
        lines <= MAX_SIGNATURES && bytes <= MAX_NOTE_BYTES
    }

    /// A set of the witnesses in `available` that meets the quorum with few cosignature
    /// bytes, `None` if they cannot meet it (the empty set for `quorum none`). Each group
    /// takes, one at a time, the member whose set adds the fewest bytes to what it took
    /// (ties: the earlier member); without members shared between groups this is the
    /// cheapest quorum.
    pub fn cheapest_quorum(&self, available: &BTreeSet<String>) -> Option<BTreeSet<String>> {
        let Some(q) = self.quorum.as_deref() else {
            return Some(BTreeSet::new());
        };
        let cost = |set: &BTreeSet<String>| -> usize {
            self.witnesses
                .iter()
                .filter(|w| set.contains(&w.name))
                .map(|w| signature_line_len(&w.vkey))
                .sum()
        };
        let mut best: BTreeMap<&str, Option<BTreeSet<String>>> = BTreeMap::new();
        for w in &self.witnesses {
            let set = available
                .contains(&w.name)
                .then(|| BTreeSet::from([w.name.clone()]));
            best.insert(&w.name, set);
        }
        for g in &self.groups {
            let mut candidates: Vec<BTreeSet<String>> = g
                .members
                .iter()
                .filter_map(|m| best.get(m.as_str()).cloned().flatten())
                .collect();
            let mut chosen = (candidates.len() >= g.threshold).then(BTreeSet::new);
            if let Some(chosen) = chosen.as_mut() {
                for _ in 0..g.threshold {
                    let pick = candidates
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, c)| cost(&chosen.union(c).cloned().collect()))
                        .map(|(i, _)| i);
                    if let Some(i) = pick {
                        chosen.extend(candidates.remove(i));
                    }
                }
            }
            best.insert(&g.name, chosen);
        }
        best.get(q).cloned().flatten()
    }

    /// The `log` lines.
    pub fn logs(&self) -> &[PolicyLog] {
        &self.logs
    }

    /// The `witness` lines: name, key and submission prefix of each.
    pub fn witnesses(&self) -> &[PolicyWitness] {
        &self.witnesses
    }

    /// The `group` lines.
    pub fn groups(&self) -> &[PolicyGroup] {
        &self.groups
    }

    /// The quorum's component name; `None` for `quorum none`.
    pub fn quorum(&self) -> Option<&str> {
        self.quorum.as_deref()
    }

    /// The log keys for `origin` (the `log` lines whose key name is `origin`).
    pub fn log_keys<'a>(&'a self, origin: &'a str) -> impl Iterator<Item = &'a Vkey> + 'a {
        self.logs
            .iter()
            .map(|l| &l.vkey)
            .filter(move |v| v.name == origin)
    }

    /// The witness whose key is (`key_name`, `key_id`), if any.
    pub fn witness_by_key(&self, key_name: &str, key_id: &[u8; 4]) -> Option<&PolicyWitness> {
        self.witnesses
            .iter()
            .find(|w| w.vkey.name == key_name && &w.vkey.key_id == key_id)
    }

    /// Whether the witnesses named in `cosigned_by` (policy names) satisfy the quorum.
    pub fn quorum_met(&self, cosigned_by: &BTreeSet<String>) -> bool {
        let Some(q) = &self.quorum else {
            return true;
        };
        // Groups only name earlier lines, so one pass in order settles every component.
        let mut met: BTreeMap<&str, bool> = BTreeMap::new();
        for w in &self.witnesses {
            met.insert(&w.name, cosigned_by.contains(&w.name));
        }
        for g in &self.groups {
            let count = g
                .members
                .iter()
                .filter(|m| met.get(m.as_str()).copied().unwrap_or(false))
                .count();
            met.insert(&g.name, count >= g.threshold);
        }
        met.get(q.as_str()).copied().unwrap_or(false)
    }
}

fn is_reserved(name: &str) -> bool {
    matches!(name, "none" | "all" | "any")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ml(name: &str, b: u8) -> String {
        Vkey::new(name, KeyKind::MlDsa44Cosignature(Box::new([b; 1312])))
            .unwrap()
            .to_string()
    }

    fn ed_cosig(name: &str) -> String {
        let pk: [u8; 32] =
            hex::decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
                .unwrap()
                .try_into()
                .unwrap();
        Vkey::new(name, KeyKind::Ed25519Cosignature(pk))
            .unwrap()
            .to_string()
    }

    fn example() -> String {
        format!(
            "# example\n\
             log {} https://registry.example/\n\
             \n\
             witness w1 {} https://w1.example/\n\
             witness\tw2\t{}   # tabs\n\
             witness w3 {}\n\
             group two-of-three 2 w1 w2 w3\n\
             group top all two-of-three\n\
             quorum top\n",
            ml("dgsp/ab", 1),
            ml("w1.example", 2),
            ml("w2.example", 3),
            ed_cosig("w3.example"),
        )
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_and_evaluates() {
        let p = Policy::parse(&example()).unwrap();
        assert_eq!(p.logs().len(), 1);
        assert_eq!(p.logs()[0].vkey.name, "dgsp/ab");
        assert_eq!(
            p.logs()[0].url.as_deref(),
            Some("https://registry.example/")
        );
        assert_eq!(p.log_keys("dgsp/ab").count(), 1);
        assert_eq!(p.log_keys("dgsp/cd").count(), 0);
        let names: Vec<_> = p.witnesses().iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["w1", "w2", "w3"]);
        assert_eq!(p.witnesses()[1].url, None);
        let w1 = &p.witnesses()[0].vkey;
        assert_eq!(
            p.witness_by_key("w1.example", &w1.key_id).unwrap().name,
            "w1"
        );
        assert!(p.witness_by_key("w1", &w1.key_id).is_none());
        assert_eq!(p.quorum(), Some("top"));
        assert_eq!(p.groups()[0].threshold, 2);
        assert!(p.quorum_met(&set(&["w1", "w3"])));
        assert!(p.quorum_met(&set(&["w1", "w2", "w3"])));
        assert!(!p.quorum_met(&set(&["w2"])));
        assert!(!p.quorum_met(&set(&["w2", "x"])));
        assert!(!p.quorum_met(&set(&[])));

        let any = example().replace("group two-of-three 2", "group two-of-three any");
        assert!(Policy::parse(&any).unwrap().quorum_met(&set(&["w2"])));
        let all = example().replace("group two-of-three 2", "group two-of-three all");
        let all = Policy::parse(&all).unwrap();
        assert!(!all.quorum_met(&set(&["w1", "w2"])));
        assert!(all.quorum_met(&set(&["w1", "w2", "w3"])));
        let single = example().replace("quorum top", "quorum w2");
        assert!(Policy::parse(&single).unwrap().quorum_met(&set(&["w2"])));
        let none = example().replace("quorum top", "quorum none");
        let none = Policy::parse(&none).unwrap();
        assert_eq!(none.quorum(), None);
        assert!(none.quorum_met(&set(&[])));
    }

    #[test]
    fn errors_name_the_line() {
        let base = example();
        let kind = |text: &str| Policy::parse(text).unwrap_err();
        let e = kind(&base.replace("group top all", "group top 0"));
        assert_eq!(
            (e.line, &e.kind),
            (8, &PolicyErrorKind::Threshold("0".into()))
        );
        assert!(e.to_string().starts_with("policy line 8: "));
        let cases: Vec<(String, usize, PolicyErrorKind)> = vec![
            (
                base.replace("group top all", "group top 2"),
                8,
                PolicyErrorKind::Threshold("2".into()),
            ),
            (
                base.replace("group top all", "group top 01"),
                8,
                PolicyErrorKind::Threshold("01".into()),
            ),
            (
                base.replace("quorum top", "quorum nobody"),
                9,
                PolicyErrorKind::UndefinedName("nobody".into()),
            ),
            (
                format!("{base}quorum top\n"),
                10,
                PolicyErrorKind::SecondQuorum,
            ),
            (
                base.replace("quorum top\n", ""),
                8,
                PolicyErrorKind::NoQuorum,
            ),
            (
                base.replace("2 w1 w2 w3", "2 w1 w2 w9"),
                7,
                PolicyErrorKind::UndefinedName("w9".into()),
            ),
            (
                base.replace("2 w1 w2 w3", "2 w1 w2 w1"),
                7,
                PolicyErrorKind::DuplicateMember("w1".into()),
            ),
            (
                base.replace("witness w3 ", "witness w1 "),
                6,
                PolicyErrorKind::DuplicateName("w1".into()),
            ),
            (
                base.replace("witness w3 ", "witness none "),
                6,
                PolicyErrorKind::DuplicateName("none".into()),
            ),
            (
                base.replace("group top ", "group w1 "),
                8,
                PolicyErrorKind::DuplicateName("w1".into()),
            ),
            (
                base.replace("quorum top", "quorum"),
                9,
                PolicyErrorKind::Fields,
            ),
            (
                base.replace("group top all two-of-three", "group top all"),
                8,
                PolicyErrorKind::Fields,
            ),
            (format!("{base}witness w9\n"), 10, PolicyErrorKind::Fields),
            (
                format!("{base}log {} u extra\n", ml("o", 9)),
                10,
                PolicyErrorKind::Fields,
            ),
            (
                format!("{base}logs x\n"),
                10,
                PolicyErrorKind::UnknownKeyword("logs".into()),
            ),
            (
                format!("{base}witness w4 {}\n", ml("w1.example", 2)),
                10,
                PolicyErrorKind::DuplicateKey,
            ),
            (
                format!("{base}witness w4 {}\n", ml("w4.example", 2)),
                10,
                PolicyErrorKind::DuplicateKey,
            ),
            (
                format!("{base}log {}\n", ml("dgsp/ab", 1)),
                10,
                PolicyErrorKind::DuplicateKey,
            ),
            (
                format!("{base}log {}\n", ed_cosig("dgsp/ab")),
                10,
                PolicyErrorKind::KeyType(4),
            ),
            (
                format!("{base}witness w4 x+00000000+AA==\n"),
                10,
                PolicyErrorKind::Vkey(VkeyError::UnsupportedType(0)),
            ),
            (
                format!(
                    "{base}witness w4 {}\n",
                    ml("w4.example", 7).replacen("w4.example+", "w5.example+", 1)
                ),
                10,
                PolicyErrorKind::Vkey(VkeyError::KeyIdMismatch),
            ),
        ];
        for (text, line, want) in cases {
            let e = kind(&text);
            assert_eq!((e.line, &e.kind), (line, &want), "{text}");
        }
        let no_log: String = base
            .lines()
            .filter(|l| !l.starts_with("log"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(kind(&no_log).kind, PolicyErrorKind::NoLog);
    }

    #[test]
    fn limits() {
        let mut text = format!("log {}\n", ml("dgsp/ab", 0));
        for i in 0..MAX_ENTRIES {
            text.push_str(&format!(
                "witness w{i} {}\n",
                ml(&format!("w{i}"), i as u8 + 1)
            ));
        }
        text.push_str("quorum w0\n");
        assert!(Policy::parse(&text).is_ok());
        let over = format!("{text}witness wx {}\n", ml("wx", 200));
        assert_eq!(kind_of(&over), PolicyErrorKind::TooMany);
        let mut groups = format!("log {}\nwitness w {}\n", ml("dgsp/ab", 0), ml("w", 1));
        for i in 0..=MAX_ENTRIES {
            groups.push_str(&format!("group g{i} any w\n"));
        }
        assert_eq!(kind_of(&groups), PolicyErrorKind::TooMany);
    }

    /// `n` witnesses of `key(name, i)`, a group `g` of them with threshold `k`, quorum g.
    fn many(n: usize, k: &str, key: impl Fn(&str, u8) -> String) -> String {
        let mut text = format!("log {}\n", ml("dgsp/00112233445566778899aabbccddeeff", 0));
        let mut names = String::new();
        for i in 0..n {
            let name = format!("w{i:02}");
            text.push_str(&format!(
                "witness {name} {}\n",
                key(&format!("{name}.example"), i as u8 + 1)
            ));
            names.push_str(&format!(" {name}"));
        }
        format!("{text}group g {k}{names}\nquorum g\n")
    }

    fn ed(name: &str, b: u8) -> String {
        let pk = ed25519_dalek::SigningKey::from_bytes(&[b; 32]).verifying_key();
        Vkey::new(name, KeyKind::Ed25519Cosignature(pk.to_bytes()))
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_quorum_that_cannot_fit_in_one_note_is_refused() {
        // 25 ML-DSA-44 witnesses, any one of them: fits (one cosignature), and the note of
        // every witness would not.
        let any = Policy::parse(&many(25, "any", ml)).unwrap();
        let all: BTreeSet<String> = any.witnesses().iter().map(|w| w.name.clone()).collect();
        assert!(!any.note_fits(&all));
        assert_eq!(any.cheapest_quorum(&all).map(|s| s.len()), Some(1));
        // 19 of them fit in 64 KiB, 20 do not.
        assert!(Policy::parse(&many(25, "19", ml)).is_ok());
        let e = Policy::parse(&many(25, "20", ml)).unwrap_err();
        assert_eq!(e.line, 28, "{e}");
        assert!(matches!(
            e.kind,
            PolicyErrorKind::QuorumTooLarge { lines: 21, bytes } if bytes > MAX_NOTE_BYTES
        ));
        assert!(e.to_string().contains("signed-note limits"), "{e}");
        assert!(matches!(
            kind_of(&many(20, "all", ml)),
            PolicyErrorKind::QuorumTooLarge { .. }
        ));
        // 31 Ed25519 cosignatures fit beside the log's line; 32 are over the line limit.
        assert!(Policy::parse(&many(31, "all", ed)).is_ok());
        assert_eq!(
            kind_of(&many(32, "all", ed)),
            PolicyErrorKind::QuorumTooLarge {
                lines: 33,
                bytes: Policy::parse(&many(32, "any", ed))
                    .unwrap()
                    .note_len(&(0..32).map(|i| format!("w{i:02}")).collect())
                    .1
            }
        );
    }

    #[test]
    fn the_cheapest_quorum_takes_the_smaller_cosignatures() {
        // Two groups: one of an ML-DSA-44 and an Ed25519 witness (any), and the Ed25519
        // witness alone; the cheapest is the Ed25519 witness once.
        let text = format!(
            "log {}\nwitness m {}\nwitness e {}\ngroup a any m e\ngroup b all e\ngroup top all a b\nquorum top\n",
            ml("dgsp/ab", 0),
            ml("m.example", 1),
            ed("e.example", 2),
        );
        let p = Policy::parse(&text).unwrap();
        assert_eq!(p.cheapest_quorum(&set(&["m", "e"])), Some(set(&["e"])));
        assert_eq!(p.cheapest_quorum(&set(&["m"])), None);
        let none = Policy::parse(&text.replace("quorum top", "quorum none")).unwrap();
        assert_eq!(none.cheapest_quorum(&set(&[])), Some(set(&[])));
        let (lines, bytes) = p.note_len(&set(&["e", "x"]));
        assert_eq!(lines, 2);
        assert!(bytes < 4096, "{bytes}");
    }

    fn kind_of(text: &str) -> PolicyErrorKind {
        Policy::parse(text).unwrap_err().kind
    }
}
