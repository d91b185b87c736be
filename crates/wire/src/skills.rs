//! Skills (SEP-2640, the extension `io.modelcontextprotocol/skills`): a server lists skills with
//! `skills/list` and names one with `skills/get`; each is a `skill://` tree whose `SKILL.md` and
//! other files are read with `resources/read`, every file listed with its SHA-256 digest
//! (`sha256:HEX`) and size.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// The extension's name in `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The scheme of a skill's files.
pub const SKILL_SCHEME: &str = "skill://";

/// How a digest is written: the algorithm, then the hex of the hash.
pub const DIGEST_PREFIX: &str = "sha256:";

/// Why a skill's entry does not vouch for every file of its tree, so that its files cannot all be
/// checked when read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unvouched {
    #[error("it is not a skill entry whose uri is skill://…/SKILL.md")]
    NotASkill,
    #[error("its SKILL.md is not among its resources")]
    SkillMdUnlisted,
    #[error("it lists a file without a uri")]
    NoUri,
    #[error("it lists {0}, which is not under its own tree")]
    Outside(String),
    #[error("it lists {0} without a {DIGEST_PREFIX}HEX digest")]
    NoDigest(String),
}

/// `skill://PATH/` of a skill whose `SKILL.md` is at `uri`.
pub fn tree_of(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix("SKILL.md")?;
    (root.starts_with(SKILL_SCHEME) && root.len() > SKILL_SCHEME.len() + 1 && root.ends_with('/'))
        .then_some(root)
}

/// What Switchboard reads of a skill's entry (`skills/list`, `skills/get`): its `uri`, and the
/// `uri` and `digest` of each file it lists. Every other field is skipped unread, so a number no
/// double holds (`1e400`, an integer past 2^64) anywhere else in the entry does not stop it being
/// read, and the entry itself is passed on as its server wrote it. A field that is not a string
/// reads as absent, and `resources` that is not an array as no files; a key given twice fails the
/// reading, since an editor might read the other one.
#[derive(Debug, Default, Deserialize)]
pub struct Entry {
    #[serde(default, deserialize_with = "text")]
    pub uri: Option<String>,
    #[serde(default, deserialize_with = "files")]
    pub resources: Vec<ListedFile>,
}

/// A file as a skill's entry lists it.
#[derive(Debug, Default, Deserialize)]
pub struct ListedFile {
    #[serde(default, deserialize_with = "text")]
    pub uri: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub digest: Option<String>,
}

impl Entry {
    /// Reads an entry's JSON text; fails when it is not a JSON object or gives a key twice.
    pub fn read(json: &str) -> Result<Entry, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// A value as a string when it is one; any other value, skipped unread, as `None`.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let raw = Box::<RawValue>::deserialize(deserializer)?;
    Ok(serde_json::from_str(raw.get()).ok())
}

/// The files of an array; anything else as none, and an item that is not an object as a file
/// with neither uri nor digest.
fn files<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<ListedFile>, D::Error> {
    let raw = Box::<RawValue>::deserialize(deserializer)?;
    let items: Vec<Box<RawValue>> = serde_json::from_str(raw.get()).unwrap_or_default();
    Ok(items
        .iter()
        .map(|item| serde_json::from_str(item.get()).unwrap_or_default())
        .collect())
}

/// Checks that a skill's entry (`skills/list`) lists its `SKILL.md` and every other file under
/// its tree with a digest: the files it does not list, or lists without one, could be anything
/// when read.
pub fn vouches_for_its_files(entry: &Entry) -> Result<(), Unvouched> {
    let tree = entry
        .uri
        .as_deref()
        .and_then(tree_of)
        .ok_or(Unvouched::NotASkill)?;
    let mut skill_md = false;
    for file in &entry.resources {
        let uri = file.uri.as_deref().ok_or(Unvouched::NoUri)?;
        if !uri.starts_with(tree) {
            return Err(Unvouched::Outside(uri.to_owned()));
        }
        let digest = file.digest.as_deref().unwrap_or_default();
        if digest.len() <= DIGEST_PREFIX.len() || !digest.starts_with(DIGEST_PREFIX) {
            return Err(Unvouched::NoDigest(uri.to_owned()));
        }
        skill_md |= uri.len() == tree.len() + "SKILL.md".len() && uri.ends_with("SKILL.md");
    }
    if skill_md {
        Ok(())
    } else {
        Err(Unvouched::SkillMdUnlisted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str) -> Result<(), Unvouched> {
        vouches_for_its_files(&Entry::read(json).expect("an entry"))
    }

    const MD: &str = r#"{"uri":"skill://a/SKILL.md","digest":"sha256:aa"}"#;

    #[test]
    fn numbers_no_double_holds_are_skipped_unread() {
        let json = r#"{"uri":"skill://a/SKILL.md","frontmatter":{"version":1.50,"big":12345678901234567890,"huge":1e400,"tiny":-1e-400},"_meta":{"n":-12345678901234567890123},"resources":[{"uri":"skill://a/SKILL.md","digest":"sha256:aa","size":1e400}]}"#;
        let entry = Entry::read(json).expect("read despite its numbers");
        assert_eq!(entry.uri.as_deref(), Some("skill://a/SKILL.md"));
        assert_eq!(entry.resources[0].digest.as_deref(), Some("sha256:aa"));
        assert_eq!(vouches_for_its_files(&entry), Ok(()));
    }

    #[test]
    fn an_entry_vouches_only_for_a_listed_skill_md_and_digests_under_its_tree() {
        assert_eq!(
            check(&format!(
                r#"{{"uri":"skill://a/SKILL.md","resources":[{MD}]}}"#
            )),
            Ok(())
        );
        assert_eq!(
            check(r#"{"uri":7,"resources":[]}"#),
            Err(Unvouched::NotASkill)
        );
        assert_eq!(
            check(r#"{"uri":"skill://a/README.md"}"#),
            Err(Unvouched::NotASkill)
        );
        assert_eq!(
            check(r#"{"uri":"skill://a/SKILL.md","resources":{"uri":"skill://a/SKILL.md"}}"#),
            Err(Unvouched::SkillMdUnlisted),
            "resources that are not an array list nothing"
        );
        assert_eq!(
            check(&format!(
                r#"{{"uri":"skill://a/SKILL.md","resources":[{MD},"x"]}}"#
            )),
            Err(Unvouched::NoUri)
        );
        assert_eq!(
            check(&format!(
                r#"{{"uri":"skill://a/SKILL.md","resources":[{MD},{{"uri":"skill://b/x","digest":"sha256:bb"}}]}}"#
            )),
            Err(Unvouched::Outside("skill://b/x".to_owned()))
        );
        assert_eq!(
            check(&format!(
                r#"{{"uri":"skill://a/SKILL.md","resources":[{MD},{{"uri":"skill://a/x","digest":7}}]}}"#
            )),
            Err(Unvouched::NoDigest("skill://a/x".to_owned()))
        );
        assert!(
            Entry::read(r#"{"uri":"skill://a/SKILL.md","uri":"skill://b/SKILL.md"}"#).is_err(),
            "a key given twice is not read"
        );
    }
}
