//! The names under which the hub offers each backend's tools and prompts, and tool filters.
//!
//! These rules are user-facing and stable: editors remember tool names (in allow lists, in
//! saved chats), so a name must not change between runs, machines or versions.
//!
//! - A tool or prompt `NAME` of a backend whose prefix is `PREFIX` (by default the backend's
//!   name) is offered as `PREFIX__NAME`. A backend whose prefix is empty (`prefix = ""`) offers
//!   it as `NAME`, its own name, under every rule below all the same.
//! - Every character of `PREFIX` or `NAME` outside `A-Z`, `a-z`, `0-9`, `_` and `-` becomes
//!   `_`, so `my.tool` is offered as `PREFIX__my_tool` (or `my_tool` without a prefix).
//! - A name is at most as long as the profile's budget (`max_name_length`, 46 characters unless
//!   a profile says otherwise: what Claude Code leaves a server named `switchboard`, which names
//!   tools `mcp__switchboard__NAME` within the model API's 64). A longer one keeps its first
//!   characters, budget minus 9, and ends in `_` and 8 lowercase hex digits of a hash; so does
//!   a longer own name, for the model API takes no longer one. The hash is the 64-bit FNV-1a
//!   hash of the prefix (empty for a backend without one) and the name as the backend wrote them
//!   (before `_` replaced anything), separated by one NUL byte; the 8 digits are its upper 32
//!   bits. So a name depends only on the server's prefix, the tool's name and the budget: the
//!   same on every machine and after every restart.
//! - When two different tools (a different backend or a different original name) would be
//!   offered under the same name, like `a.b` and `a_b`, neither keeps that name: both take
//!   the hashed form, their first characters cut so that the name stays within the budget. So
//!   it is when a backend without a prefix offers `github__create_issue` and the backend
//!   `github` offers `create_issue`; and in search mode, when a tool would be offered as
//!   `search_tools` or `call_tool`, Switchboard's own tools there. Such a clash between
//!   backends, or with Switchboard's own tools, is never silent: [`expose`] reports it as a
//!   [`Clash`], which the profile's warnings show (the dashboard's attention list, `switchboard
//!   check`) and the log tells.
//! - If names are still the same after that (two backends given the same prefix offering the
//!   same tool, or a backend listing one tool twice), the first in backend order keeps its
//!   name and the next ones end in `_2`, `_3` and so on, again within the budget.
//! - Two backends without a prefix are a config error (the later one is left out): every name
//!   both offer would clash.
//!
//! Tool filters (`tools_allow`, `tools_deny` in the config) are glob patterns: `*` matches any
//! run of characters, possibly empty, `?` matches exactly one character, and every other
//! character matches itself, case-sensitively. A pattern must match the whole name.

use std::collections::{HashMap, HashSet};

pub(crate) use config::glob_match;

/// Between the prefix and the backend's own name.
const SEPARATOR: &str = "__";

/// Hex digits of the hash that ends a shortened or disambiguated name.
const HASH_LEN: usize = 8;

/// One name as a backend offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offered<'a> {
    pub(crate) backend: &'a str,
    pub(crate) prefix: &'a str,
    pub(crate) name: &'a str,
}

/// What [`expose`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exposed {
    /// The exposed name of every offered name, in the same order.
    pub(crate) names: Vec<String>,
    /// Each name that offered names of more than one backend wanted, or that one wanted and
    /// Switchboard keeps, so that none of them has it; in the order they were offered.
    pub(crate) clashes: Vec<Clash>,
}

/// Names of different backends (or a name Switchboard keeps for a tool of its own) that would
/// have been offered under the same name, so that none of them is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Clash {
    /// The name they would have had.
    pub(crate) name: String,
    /// Whether Switchboard keeps that name for a tool of its own.
    pub(crate) reserved: bool,
    /// Each name that wanted it, in order.
    pub(crate) claimants: Vec<Claimant>,
}

/// One of the names in a [`Clash`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claimant {
    pub(crate) backend: String,
    /// The backend's own name for it.
    pub(crate) name: String,
    /// The name it is offered under instead.
    pub(crate) exposed: String,
}

/// Exposed names for every offered name, in the same order; unique, none of them in `reserved`,
/// and each at most `budget` characters long (between [`MIN_NAME_BUDGET`] and
/// [`MAX_NAME_BUDGET`]); with the clashes that took names away.
///
/// [`MIN_NAME_BUDGET`]: config::MIN_NAME_BUDGET
/// [`MAX_NAME_BUDGET`]: config::MAX_NAME_BUDGET
pub(crate) fn expose(offered: &[Offered<'_>], reserved: &[&str], budget: usize) -> Exposed {
    let plain_names: Vec<String> = offered
        .iter()
        .map(|item| exposed_name(item.prefix, item.name, budget))
        .collect();

    // Which distinct tools want each plain name.
    let mut claimants: HashMap<&str, HashSet<(&str, &str)>> = HashMap::new();
    for (item, plain_name) in offered.iter().zip(&plain_names) {
        claimants
            .entry(plain_name)
            .or_default()
            .insert((item.backend, item.name));
    }

    let mut taken: HashSet<String> = reserved.iter().map(|name| (*name).to_owned()).collect();
    let mut names = Vec::with_capacity(offered.len());
    let mut clashes: Vec<Clash> = Vec::new();
    for (item, plain_name) in offered.iter().zip(&plain_names) {
        let wanted_by = &claimants[plain_name.as_str()];
        let is_reserved = reserved.contains(&plain_name.as_str());
        let candidate = if wanted_by.len() > 1 || is_reserved {
            hashed_name(item.prefix, item.name, budget)
        } else {
            plain_name.clone()
        };
        let unique = if taken.contains(&candidate) {
            numbered_name(&candidate, &taken, budget)
        } else {
            candidate
        };
        taken.insert(unique.clone());
        let between_backends = wanted_by
            .iter()
            .any(|(backend, _)| *backend != item.backend);
        if between_backends || is_reserved {
            let claimant = Claimant {
                backend: item.backend.to_owned(),
                name: item.name.to_owned(),
                exposed: unique.clone(),
            };
            match clashes.iter_mut().find(|clash| clash.name == *plain_name) {
                Some(clash) => clash.claimants.push(claimant),
                None => clashes.push(Clash {
                    name: plain_name.clone(),
                    reserved: is_reserved,
                    claimants: vec![claimant],
                }),
            }
        }
        names.push(unique);
    }
    Exposed { names, clashes }
}

/// What every exposed name of a backend with this prefix starts with: `PREFIX__`, sanitized,
/// or nothing for a backend without a prefix.
pub(crate) fn exposed_prefix(prefix: &str) -> String {
    let mut exposed = String::with_capacity(prefix.len() + SEPARATOR.len());
    if !prefix.is_empty() {
        push_sanitized(&mut exposed, prefix);
        exposed.push_str(SEPARATOR);
    }
    exposed
}

/// The exposed name of one tool or prompt within `budget`, without looking at any other name.
pub(crate) fn exposed_name(prefix: &str, name: &str, budget: usize) -> String {
    let exposed = whole_name(prefix, name);
    if exposed.len() <= budget {
        return exposed;
    }
    hashed_name(prefix, name, budget)
}

/// For a name that [`expose`] cut short and ended with `_` and a hash, the part before them;
/// `None` for a name that ends with the backend's own `original` name, whole.
pub(crate) fn cut_stem<'a>(exposed: &'a str, original: &str) -> Option<&'a str> {
    let mut whole = String::with_capacity(original.len());
    push_sanitized(&mut whole, original);
    if exposed.ends_with(&whole) {
        return None;
    }
    let (stem, end) = exposed.split_at(exposed.len().checked_sub(HASH_LEN + 1)?);
    let hashed = end
        .strip_prefix('_')
        .is_some_and(|hash| hash.bytes().all(|byte| byte.is_ascii_hexdigit()));
    hashed.then_some(stem)
}

/// A tool passes when it matches any allow pattern (or allow is empty) and no deny pattern.
pub(crate) fn tool_allowed(name: &str, allow: &[String], deny: &[String]) -> bool {
    let allowed = allow.is_empty() || allow.iter().any(|pattern| glob_match(pattern, name));
    allowed && !deny.iter().any(|pattern| glob_match(pattern, name))
}

/// The name sanitized, after `PREFIX__` unless the prefix is empty.
fn whole_name(prefix: &str, name: &str) -> String {
    let mut exposed = exposed_prefix(prefix);
    push_sanitized(&mut exposed, name);
    exposed
}

/// [`whole_name`] cut to leave room for `_` and the hash, then `_` and the hash.
fn hashed_name(prefix: &str, name: &str, budget: usize) -> String {
    let mut exposed = whole_name(prefix, name);
    // Sanitized text is ASCII, so any byte length is a character boundary.
    exposed.truncate(budget - 1 - HASH_LEN);
    let hash = fnv1a_64(&[prefix.as_bytes(), b"\0", name.as_bytes()]);
    exposed.push('_');
    exposed.push_str(&format!("{:08x}", hash >> 32));
    exposed
}

/// `name` ending in `_N` for the smallest N from 2 up that gives a name not yet taken.
fn numbered_name(name: &str, taken: &HashSet<String>, budget: usize) -> String {
    (2usize..)
        .map(|number| {
            let suffix = format!("_{number}");
            let kept = name.len().min(budget - suffix.len());
            // Exposed names are ASCII, so any byte length is a character boundary.
            format!("{}{suffix}", &name[..kept])
        })
        .find(|candidate| !taken.contains(candidate))
        .expect("only finitely many names are taken")
}

fn push_sanitized(target: &mut String, text: &str) {
    target.extend(text.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        }
    }));
}

/// The 64-bit FNV-1a hash of `parts` concatenated: simple, fixed by its definition, and the
/// same on every machine, unlike the standard library's seeded hashers.
fn fnv1a_64(parts: &[&[u8]]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET_BASIS;
    for &byte in parts.iter().flat_map(|part| part.iter()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::MAX_NAME_BUDGET as MAX_EXPOSED_LEN;

    fn offered<'a>(backend: &'a str, name: &'a str) -> Offered<'a> {
        Offered {
            backend,
            prefix: backend,
            name,
        }
    }

    /// The exposed names of `offered`, with no name kept for Switchboard.
    fn names_of(offered: &[Offered<'_>], budget: usize) -> Vec<String> {
        expose(offered, &[], budget).names
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn plain_names_are_prefixed() {
        assert_eq!(
            exposed_name("fs", "read_file", MAX_EXPOSED_LEN),
            "fs__read_file"
        );
        assert_eq!(
            exposed_name("my-server", "Get-Thing2", MAX_EXPOSED_LEN),
            "my-server__Get-Thing2"
        );
        assert_eq!(exposed_name("fs", "", MAX_EXPOSED_LEN), "fs__");
        assert_eq!(
            names_of(
                &[offered("fs", "read"), offered("git", "read")],
                MAX_EXPOSED_LEN
            ),
            ["fs__read", "git__read"]
        );
    }

    #[test]
    fn characters_outside_the_alphabet_become_underscores() {
        assert_eq!(
            exposed_name("my.server", "files/read", MAX_EXPOSED_LEN),
            "my_server__files_read"
        );
        assert_eq!(
            exposed_name("fs", "caf\u{e9} \u{1f600}!", MAX_EXPOSED_LEN),
            "fs__caf____"
        );
    }

    #[test]
    fn a_name_of_exactly_64_characters_is_kept() {
        let name = "n".repeat(MAX_EXPOSED_LEN - "fs__".len());
        let exposed = exposed_name("fs", &name, MAX_EXPOSED_LEN);
        assert_eq!(exposed.len(), 64);
        assert_eq!(exposed, format!("fs__{name}"));
    }

    #[test]
    fn a_longer_name_is_shortened_to_64_with_a_fixed_hash() {
        let name = "n".repeat(MAX_EXPOSED_LEN - "fs__".len() + 1);
        let exposed = exposed_name("fs", &name, MAX_EXPOSED_LEN);
        assert_eq!(exposed.len(), 64);
        // A fixed expectation: names must not change between versions.
        assert_eq!(
            exposed,
            "fs__nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn_cf320adb"
        );
        assert_eq!(exposed_name("fs", &name, MAX_EXPOSED_LEN), exposed);

        let other = exposed_name("fs", &format!("{name}x"), MAX_EXPOSED_LEN);
        assert_eq!(other.len(), 64);
        assert_ne!(other, exposed);
        assert_eq!(&other[..55], &exposed[..55]);
    }

    #[test]
    fn the_hash_is_of_the_names_as_written() {
        let long = "x".repeat(70);
        let dotted = exposed_name("a.b", &long, MAX_EXPOSED_LEN);
        let underscored = exposed_name("a_b", &long, MAX_EXPOSED_LEN);
        assert_eq!(dotted.len(), 64);
        assert_eq!(dotted[..55], underscored[..55]);
        assert_ne!(dotted, underscored);
    }

    #[test]
    fn fnv1a_matches_its_reference_values() {
        assert_eq!(fnv1a_64(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(&[b"foo", b"bar"]), fnv1a_64(&[b"foobar"]));
        assert_eq!(fnv1a_64(&[b"foobar"]), 0x85944171f73967e8);
    }

    #[test]
    fn colliding_names_both_take_the_hashed_form() {
        let exposed = names_of(
            &[
                offered("fs", "a.b"),
                offered("fs", "other"),
                offered("fs", "a_b"),
            ],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(exposed[1], "fs__other");
        assert_ne!(exposed[0], exposed[2]);
        for name in [&exposed[0], &exposed[2]] {
            assert!(name.starts_with("fs__a_b_"), "{name}");
            assert_eq!(name.len(), "fs__a_b_".len() + HASH_LEN);
        }
        assert_eq!(exposed[0], hashed_name("fs", "a.b", MAX_EXPOSED_LEN));
        assert_eq!(exposed[2], hashed_name("fs", "a_b", MAX_EXPOSED_LEN));
        // The same input gives the same names in another order.
        let reversed = names_of(
            &[offered("fs", "a_b"), offered("fs", "a.b")],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(reversed, [exposed[2].clone(), exposed[0].clone()]);
    }

    #[test]
    fn backends_colliding_through_their_prefixes_are_told_apart() {
        let exposed = names_of(
            &[
                offered("a.b", "tool"),
                offered("a_b", "tool"),
                Offered {
                    backend: "third",
                    prefix: "a_b",
                    name: "tool",
                },
            ],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(exposed[0], hashed_name("a.b", "tool", MAX_EXPOSED_LEN));
        assert_eq!(exposed[1], hashed_name("a_b", "tool", MAX_EXPOSED_LEN));
        // Same prefix and same name: the hash is the same, so a number tells them apart.
        assert_eq!(exposed[2], format!("{}_2", exposed[1]));
        assert_eq!(unique_count(&exposed), 3);
    }

    #[test]
    fn a_repeated_tool_is_numbered() {
        let exposed = names_of(
            &[
                offered("fs", "read"),
                offered("fs", "read"),
                offered("fs", "read"),
            ],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(exposed, ["fs__read", "fs__read_2", "fs__read_3"]);
    }

    #[test]
    fn numbered_long_names_stay_within_64() {
        let long = "l".repeat(80);
        let exposed = names_of(
            &[offered("fs", &long), offered("fs", &long)],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(exposed[0], exposed_name("fs", &long, MAX_EXPOSED_LEN));
        assert_eq!(exposed[1].len(), 64);
        assert!(exposed[1].ends_with("_2"), "{}", exposed[1]);
        assert_eq!(unique_count(&exposed), 2);
    }

    #[test]
    fn a_number_never_reuses_a_name_that_is_taken() {
        let exposed = names_of(
            &[
                offered("fs", "read_2"),
                offered("fs", "read"),
                offered("fs", "read"),
            ],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(exposed, ["fs__read_2", "fs__read", "fs__read_3"]);
    }

    #[test]
    fn without_a_prefix_a_name_is_the_backends_own() {
        assert_eq!(exposed_prefix(""), "");
        assert_eq!(exposed_prefix("fs"), "fs__");
        assert_eq!(exposed_name("", "read_file", MAX_EXPOSED_LEN), "read_file");
        assert_eq!(
            exposed_name("", "files/read caf\u{e9}", MAX_EXPOSED_LEN),
            "files_read_caf_",
            "sanitized as a prefixed name is"
        );
        let unprefixed = Offered {
            backend: "plain",
            prefix: "",
            name: "read_file",
        };
        let exposed = expose(
            &[unprefixed, offered("fs", "read_file")],
            &[],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(exposed.names, ["read_file", "fs__read_file"]);
        assert_eq!(exposed.clashes, []);
    }

    #[test]
    fn a_long_own_name_is_hashed_within_the_budget() {
        let name = "n".repeat(MAX_EXPOSED_LEN);
        assert_eq!(exposed_name("", &name, MAX_EXPOSED_LEN), name);
        let longer = "n".repeat(MAX_EXPOSED_LEN + 1);
        let exposed = exposed_name("", &longer, MAX_EXPOSED_LEN);
        // A fixed expectation: the FNV-1a hash of a NUL byte (the empty prefix) and the name.
        assert_eq!(
            exposed,
            "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn_3a95fecb"
        );
        assert_eq!(exposed.len(), 64);
    }

    #[test]
    fn an_own_name_another_backend_would_have_is_told_apart_and_reported() {
        let offered = [
            Offered {
                backend: "conformance",
                prefix: "",
                name: "github__create_issue",
            },
            offered("github", "create_issue"),
            offered("github", "list_issues"),
        ];
        let exposed = expose(&offered, &[], MAX_EXPOSED_LEN);
        // Fixed expectations: the hashes of "\0github__create_issue" and "github\0create_issue".
        assert_eq!(
            exposed.names,
            [
                "github__create_issue_93bee394",
                "github__create_issue_9e372030",
                "github__list_issues"
            ]
        );
        assert_eq!(
            exposed.clashes,
            [Clash {
                name: "github__create_issue".to_owned(),
                reserved: false,
                claimants: vec![
                    Claimant {
                        backend: "conformance".to_owned(),
                        name: "github__create_issue".to_owned(),
                        exposed: "github__create_issue_93bee394".to_owned(),
                    },
                    Claimant {
                        backend: "github".to_owned(),
                        name: "create_issue".to_owned(),
                        exposed: "github__create_issue_9e372030".to_owned(),
                    },
                ],
            }]
        );
    }

    #[test]
    fn a_reserved_name_is_never_given_and_taking_it_is_reported() {
        let offered = [
            Offered {
                backend: "plain",
                prefix: "",
                name: "search_tools",
            },
            Offered {
                backend: "plain",
                prefix: "",
                name: "search",
            },
        ];
        let exposed = expose(&offered, &["search_tools", "call_tool"], MAX_EXPOSED_LEN);
        assert_eq!(exposed.names, ["search_tools_09d848d7", "search"]);
        assert_eq!(
            exposed.clashes,
            [Clash {
                name: "search_tools".to_owned(),
                reserved: true,
                claimants: vec![Claimant {
                    backend: "plain".to_owned(),
                    name: "search_tools".to_owned(),
                    exposed: "search_tools_09d848d7".to_owned(),
                }],
            }]
        );
        assert_eq!(
            expose(&offered, &[], MAX_EXPOSED_LEN).names,
            ["search_tools", "search"],
            "kept where Switchboard has no tool of that name"
        );
    }

    #[test]
    fn only_clashes_between_backends_are_reported() {
        let within_one = expose(
            &[offered("fs", "a.b"), offered("fs", "a_b")],
            &[],
            MAX_EXPOSED_LEN,
        );
        assert_eq!(within_one.clashes, [], "{within_one:?}");
        let shared_prefix = expose(
            &[
                offered("files", "read"),
                Offered {
                    backend: "other",
                    prefix: "files",
                    name: "read",
                },
            ],
            &[],
            MAX_EXPOSED_LEN,
        );
        let clashes = &shared_prefix.clashes;
        assert_eq!(clashes.len(), 1, "{clashes:?}");
        assert_eq!(clashes[0].name, "files__read");
        let exposed: Vec<&str> = clashes[0]
            .claimants
            .iter()
            .map(|claimant| claimant.exposed.as_str())
            .collect();
        assert_eq!(exposed, shared_prefix.names);
    }

    fn unique_count(names: &[String]) -> usize {
        names.iter().collect::<HashSet<_>>().len()
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("*", ""));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("read_*", "read_file"));
        assert!(glob_match("read_*", "read_"));
        assert!(!glob_match("read_*", "xread_file"));
        assert!(glob_match("*_file", "read_file"));
        assert!(!glob_match("*_file", "read_files"));
        assert!(glob_match("r??d", "read"));
        assert!(!glob_match("r??d", "red"));
        assert!(glob_match("?", "\u{e9}"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(glob_match("**", "x"));
        assert!(!glob_match("Read_*", "read_file"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
    }

    #[test]
    fn an_empty_pattern_matches_only_the_empty_name() {
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
        assert!(!glob_match("a", ""));
    }

    #[test]
    fn a_pathological_glob_is_fast() {
        let text = "a".repeat(100_000);
        let started = std::time::Instant::now();
        assert!(!glob_match("a*a*a*a*b", &text));
        assert!(glob_match("a*a*a*a*a", &text));
        assert!(!glob_match("*a*a*a*a*?b", &text));
        // Quadratic behaviour would take minutes here; linear takes milliseconds.
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn tools_pass_the_allow_list_and_not_the_deny_list() {
        let none: Vec<String> = Vec::new();
        assert!(tool_allowed("anything", &none, &none));

        let allow = strings(&["read_*", "list"]);
        assert!(tool_allowed("read_file", &allow, &none));
        assert!(tool_allowed("list", &allow, &none));
        assert!(!tool_allowed("write_file", &allow, &none));

        let deny = strings(&["*_secret", "delete_*"]);
        assert!(tool_allowed("read_file", &none, &deny));
        assert!(!tool_allowed("delete_all", &none, &deny));
        assert!(!tool_allowed("read_secret", &allow, &deny));
        assert!(tool_allowed("read_file", &allow, &deny));
    }
}
