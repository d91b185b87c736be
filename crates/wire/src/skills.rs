//! Skills (SEP-2640, the extension `io.modelcontextprotocol/skills`): a server lists skills with
//! `skills/list` and names one with `skills/get`; each is a `skill://` tree whose `SKILL.md` and
//! other files are read with `resources/read`, every file listed with its SHA-256 digest
//! (`sha256:HEX`) and size.

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

/// Checks that a skill's entry (`skills/list`) lists its `SKILL.md` and every other file under
/// its tree with a digest: the files it does not list, or lists without one, could be anything
/// when read.
pub fn vouches_for_its_files(entry: &serde_json::Value) -> Result<(), Unvouched> {
    let tree = entry["uri"]
        .as_str()
        .and_then(tree_of)
        .ok_or(Unvouched::NotASkill)?;
    let mut skill_md = false;
    for file in entry["resources"].as_array().into_iter().flatten() {
        let uri = file["uri"].as_str().ok_or(Unvouched::NoUri)?;
        if !uri.starts_with(tree) {
            return Err(Unvouched::Outside(uri.to_owned()));
        }
        let digest = file["digest"].as_str().unwrap_or_default();
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
