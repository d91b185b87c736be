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
