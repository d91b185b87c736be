//! The shape ARCHITECTURE.md promises, checked on every run where the compiler does not check
//! it: the crates under `crates/` stand on floors and depend only on lower ones; only
//! `platform` names a target system, and no code an architecture; no source file is over 900
//! lines; `src/` holds only the program's entry; a method's name is written in
//! `crates/wire/src/method.rs` alone; logs write no value in its `Debug` form; and the map
//! itself stays short. Cycles between crates Cargo refuses on its own. Then the pages: the
//! README starts in one screen, and every link between the README, the map and `docs/` leads
//! to a page and a heading that exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The longest a source file grows.
const LONGEST: usize = 900;

/// The longest ARCHITECTURE.md grows, in words: a codemap, with the detail in module docs.
const LONGEST_MAP: usize = 3500;

/// Each crate under `crates/` and its floor: a crate depends only on crates of lower floors.
/// ARCHITECTURE.md draws the same floors.
const FLOORS: [(&str, u8); 12] = [
    ("platform", 1),
    ("wire", 2),
    ("config", 3),
    ("auth", 4),
    ("activity", 4),
    ("supervisor", 5),
    ("hub", 6),
    ("transport", 7),
    ("registry", 7),
    ("editors", 8),
    ("control", 9),
    ("cli", 10),
];

/// The files outside `platform` that may name a target system in a `cfg`: where `transport`
/// declares the Unix-only handoff of an editor's stdio (ARCHITECTURE.md names them).
const HANDOFF_SEAMS: [&str; 3] = [
    "crates/transport/src/connect/mod.rs",
    "crates/transport/src/handoff/mod.rs",
    "crates/transport/src/socket/mod.rs",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every Rust file under the given folders of the project.
fn sources(folders: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    for folder in folders {
        walk(&root().join(folder), &mut found);
    }
    found.sort();
    found
}

/// A file's path within the project, with forward slashes.
fn relative(file: &Path) -> String {
    file.strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// The text of a file without its tests, which may reach anywhere and write messages as they
/// are on the wire: `None` for a file of a `tests` folder or a `tests.rs`, and a file's own
/// `mod tests`, which comes last, left out.
fn outside_tests(file: &Path) -> Option<String> {
    let name = relative(file);
    if name
        .split('/')
        .any(|part| part == "tests" || part == "tests.rs")
    {
        return None;
    }
    let text = std::fs::read_to_string(file).expect("a source file");
    let end = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    Some(text[..end].to_owned())
}

/// Each crate of the workspace under `crates/` with the workspace crates it depends on, as
/// `cargo metadata` reads them from the manifests.
#[allow(clippy::disallowed_methods)] // cargo itself, not a backend: nothing to supervise
fn crate_dependencies() -> BTreeMap<String, Vec<String>> {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata: {output:?}");
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("its JSON");
    let crates = root().join("crates");
    let mut found = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let manifest = Path::new(package["manifest_path"].as_str().expect("a manifest"));
        if !manifest.starts_with(&crates) {
            continue;
        }
        let local = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|dependency| dependency["path"].is_string())
            .map(|dependency| dependency["name"].as_str().expect("a name").to_owned())
            .collect();
        found.insert(package["name"].as_str().expect("a name").to_owned(), local);
    }
    found
}

fn floor(name: &str) -> Option<u8> {
    FLOORS
        .iter()
        .find(|(crate_name, _)| *crate_name == name)
        .map(|(_, floor)| *floor)
}

#[test]
fn every_crate_depends_only_on_lower_floors() {
    let crates = crate_dependencies();
    let named: Vec<&str> = FLOORS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        crates.keys().map(String::as_str).collect::<Vec<_>>(),
        {
            let mut sorted = named.clone();
            sorted.sort();
            sorted
        },
        "the crates under crates/ are the floors this check and ARCHITECTURE.md name"
    );
    let mut upward = Vec::new();
    for (name, dependencies) in &crates {
        let own = floor(name).expect("a floor");
        for dependency in dependencies {
            if floor(dependency).is_none_or(|theirs| theirs >= own) {
                upward.push(format!("{name} (floor {own}) depends on {dependency}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "dependencies that do not run down: {upward:#?}"
    );
}

#[test]
fn the_map_is_short_and_names_every_crate() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let words = map.split_whitespace().count();
    assert!(
        words <= LONGEST_MAP,
        "ARCHITECTURE.md is {words} words, over {LONGEST_MAP}: move detail into module docs"
    );
    let unnamed: Vec<&str> = FLOORS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !map.contains(&format!("crates/{name}")))
        .collect();
    assert!(
        unnamed.is_empty(),
        "crates ARCHITECTURE.md does not name: {unnamed:?}"
    );
}

#[test]
fn only_platform_names_a_target_system() {
    let mut found = Vec::new();
    for file in sources(&["crates", "src"]) {
        let name = relative(&file);
        if name.starts_with("crates/platform/") || HANDOFF_SEAMS.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (number, line) in code(&text).lines().enumerate() {
            let names_one = ["windows", "unix", "target_os", "target_family"]
                .iter()
                .any(|system| line.contains("cfg") && line.contains(system));
            if names_one {
                found.push(format!("{name}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cfg on a target system outside crates/platform/: {found:#?}"
    );
}

/// scripts/test lints macOS for `x86_64` only when `Cargo.lock` changed: that holds while no code
/// of ours differs between architectures.
#[test]
fn no_code_names_an_architecture() {
    let named: Vec<String> = sources(&["crates", "src", "src-tauri/src"])
        .iter()
        .filter(|file| {
            code(&std::fs::read_to_string(file).expect("a source file")).contains("target_arch")
        })
        .map(|file| relative(file))
        .collect();
    assert!(
        named.is_empty(),
        "files that name an architecture: {named:?}"
    );
}

#[test]
fn no_source_file_is_over_the_limit() {
    let long: Vec<String> = sources(&["crates", "src", "src-tauri/src"])
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file)
                .expect("a source file")
                .lines()
                .count();
            (lines > LONGEST).then(|| format!("{}: {lines} lines", relative(file)))
        })
        .collect();
    assert!(long.is_empty(), "files over {LONGEST} lines: {long:#?}");
}

#[test]
fn src_holds_only_the_programs_entry() {
    let entries: Vec<String> = std::fs::read_dir(root().join("src"))
        .expect("src/")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries,
        ["main.rs"],
        "src/ holds the program's entry alone; the rest is in crates/"
    );
}

/// The text of a file without comments, string and character literals (which may hold `::`).
fn code(text: &str) -> String {
    scan(text, |_, _| {})
}

/// The text of a file without comments, string and character literals; each string literal
/// (raw and byte strings too) goes to `literal` with where it starts, quotes and all.
fn scan(text: &str, literal: impl FnMut(usize, &str)) -> String {
    scan_into(text, Blank::Shrink, literal)
}

/// How [`scan_into`] leaves out a comment or a literal.
#[derive(Clone, Copy, PartialEq)]
enum Blank {
    /// A literal becomes one space, a comment nothing.
    Shrink,
    /// Each becomes as many spaces as it has bytes, its line breaks kept: every byte of the
    /// code stays where it was in the file.
    InPlace,
}

fn scan_into(text: &str, blank: Blank, mut literal: impl FnMut(usize, &str)) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let leave_out = |out: &mut String, left_out: &str, shrunk: &str| match blank {
        Blank::Shrink => out.push_str(shrunk),
        Blank::InPlace => out.extend(
            left_out
                .bytes()
                .map(|byte| if byte == b'\n' { '\n' } else { ' ' }),
        ),
    };
    while at < bytes.len() {
        let rest = &text[at..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            leave_out(&mut out, &rest[..end], "");
            at += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |end| end + 2);
            leave_out(&mut out, &rest[..end], "");
            at += end;
        } else if let Some(raw) = raw_string_end(rest) {
            literal(at, &rest[..raw]);
            leave_out(&mut out, &rest[..raw], " ");
            at += raw;
        } else if rest.starts_with('"') {
            let mut end = 1;
            while end < rest.len() {
                match rest.as_bytes()[end] {
                    b'\\' => end += 2,
                    b'"' => break,
                    _ => end += 1,
                }
            }
            let end = (end + 1).min(rest.len());
            literal(at, &rest[..end]);
            leave_out(&mut out, &rest[..end], " ");
            at += end;
        } else if let Some(length) = char_literal(rest) {
            leave_out(&mut out, &rest[..length], " ");
            at += length;
        } else {
            let character = rest.chars().next().unwrap();
            out.push(character);
            at += character.len_utf8();
        }
    }
    out
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start of `text`.
fn raw_string_end(text: &str) -> Option<usize> {
    let after_b = text.strip_prefix('b').unwrap_or(text);
    let after_r = after_b.strip_prefix('r')?;
    let hashes = after_r.len() - after_r.trim_start_matches('#').len();
    let body = after_r[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = body.find(&close)?;
    Some(text.len() - body.len() + end + close.len())
}

/// The length of a character literal (`'a'`, `'\n'`, `'"'`) at the start of `text`; lifetimes
/// are not one.
fn char_literal(text: &str) -> Option<usize> {
    let rest = text.strip_prefix('\'')?;
    let mut characters = rest.char_indices();
    let (_, first) = characters.next()?;
    let body = match first {
        '\\' => rest[1..].find('\'')? + 1,
        _ => first.len_utf8(),
    };
    (rest[body..].starts_with('\'')).then_some(body + 2)
}

#[test]
fn the_check_reads_code_without_strings_or_comments() {
    assert_eq!(code(r#"let a = "crate::x"; // super::y"#), "let a =  ; ");
    assert_eq!(
        code("fn f<'a>(x: &'a str) -> char { '\"' }"),
        "fn f<'a>(x: &'a str) -> char {   }"
    );
}

/// The one file that writes methods' names; everything else uses its `Method`.
const METHOD_FILE: &str = "crates/wire/src/method.rs";

/// How the name of a method of MCP begins (`tools/call`, `notifications/progress`).
const METHOD_PREFIXES: [&str; 12] = [
    "tools/",
    "resources/",
    "prompts/",
    "notifications/",
    "completion/",
    "logging/",
    "sampling/",
    "elicitation/",
    "roots/",
    "tasks/",
    "subscriptions/",
    "server/",
];

/// The string literals of `text` that are a method's name (not a sentence that starts with
/// one: a name has no spaces), each with its line. Comments are no literals.
fn method_names(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    scan(text, |at, literal| {
        let content = literal.trim_start_matches(['b', 'r', '#']);
        let content = content.strip_prefix('"').unwrap_or(content);
        let content = content.trim_end_matches('#');
        let content = content.strip_suffix('"').unwrap_or(content);
        let named = matches!(content, "initialize" | "ping")
            || (METHOD_PREFIXES
                .iter()
                .any(|prefix| content.starts_with(prefix))
                && !content.contains(char::is_whitespace));
        if named {
            let line = text[..at].matches('\n').count() + 1;
            found.push((line, literal.to_owned()));
        }
    });
    found
}

#[test]
fn a_method_is_named_only_by_its_enum() {
    let mut written = Vec::new();
    for file in sources(&["crates"]) {
        let name = relative(&file);
        if name == METHOD_FILE {
            continue;
        }
        let Some(text) = outside_tests(&file) else {
            continue;
        };
        for (line, literal) in method_names(&text) {
            written.push(format!("{name}:{line}: {literal}"));
        }
    }
    assert!(
        written.is_empty(),
        "method names written outside {METHOD_FILE}: match on `Method`, or write \
         `Method::X.as_str()`:\n{}",
        written.join("\n")
    );
}

#[test]
fn the_check_sees_a_method_name_but_not_a_sentence_or_a_comment() {
    let text = "let a = \"tools/call\"; // \"ping\"\n/// \"initialize\"\n\
                let b = \"tools/call needs a name\";\nlet c = b\"ping\"; let d = \"pings\";";
    assert_eq!(
        method_names(text),
        vec![(1, "\"tools/call\"".to_owned()), (4, "\"ping\"".to_owned())]
    );
}

/// The longest the README grows, in lines: what Switchboard is and how to start, in one screen,
/// and a table of contents into `docs/` for the rest.
const README_LINES: usize = 300;

/// The project's Markdown pages: the README, the map, and `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|extension| extension == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    pages
}

/// A page's text without its fenced code blocks and code spans, where a `](` is not a link.
fn prose(text: &str) -> String {
    let mut outside_fences = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            outside_fences.push_str(line);
            outside_fences.push('\n');
        }
    }
    // Code spans may run over a line break; what lies between two backticks is code.
    outside_fences
        .split('`')
        .step_by(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The targets of a page's inline links, as written: `[text](target)`.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    targets
}

/// The anchors GitHub gives a page's headings: lowercased, punctuation dropped, spaces made
/// `-`, and a repeated one numbered.
fn anchors(text: &str) -> Vec<String> {
    let mut anchors: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let slug: String = heading
            .trim_start_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let repeats = anchors.iter().filter(|known| **known == slug).count();
        anchors.push(if repeats == 0 {
            slug.clone()
        } else {
            format!("{slug}-{repeats}")
        });
    }
    anchors
}

#[test]
fn the_readme_starts_in_one_screen() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_LINES,
        "README.md is {lines} lines, over {README_LINES}: move reference text into docs/"
    );
}

#[test]
fn every_relative_link_of_the_pages_points_at_what_exists() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page");
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a folder").join(path)
            };
            let found = if !file.exists() {
                false
            } else if anchor.is_empty() {
                true
            } else {
                let linked = std::fs::read_to_string(&file).expect("a linked page");
                anchors(&linked).iter().any(|known| known == anchor)
            };
            if !found {
                broken.push(format!("{}: {target}", relative(&page)));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}

#[test]
fn the_link_check_reads_links_and_anchors_as_github_does() {
    let page = "# Chaos and load: `tests/it/soak/`\n## Names\n## Names\n\
                A [link](a.md#b) and `[code](x)`, over\n`a [span](y)` break.\n\
                ```\n[fenced](z)\n# not a heading\n```\n";
    assert_eq!(link_targets(page), ["a.md#b"]);
    assert_eq!(
        anchors(page),
        ["chaos-and-load-testsitsoak", "names", "names-1"]
    );
}

/// The macros of `tracing` that write an event or open a span.
const TRACING_MACROS: [&str; 12] = [
    "trace",
    "debug",
    "info",
    "warn",
    "error",
    "event",
    "span",
    "trace_span",
    "debug_span",
    "info_span",
    "warn_span",
    "error_span",
];

/// Each call of a `tracing` macro in `text` that writes a value in its `Debug` form, with its
/// line: a field with the `?` sigil or `field::debug`, or a format string with `{:?}` (or
/// `{name:?}`, `{:#?}`). A bare `info!` counts in a file that imports from `tracing`.
fn debug_forms(text: &str) -> Vec<(usize, String)> {
    let mut literals = Vec::new();
    let code = scan_into(text, Blank::InPlace, |at, literal| {
        literals.push((at, literal.to_owned()));
    });
    let imports_tracing = code.contains("use tracing");
    let mut found = Vec::new();
    for (bang, _) in code.match_indices('!') {
        let before = &code[..bang];
        let start = before
            .trim_end_matches(|character: char| {
                character.is_ascii_alphanumeric() || character == '_'
            })
            .len();
        let path = &before[..start];
        let of_tracing = path.ends_with("tracing::")
            || (imports_tracing && !path.ends_with("::") && !path.ends_with('.'));
        if !of_tracing || !TRACING_MACROS.contains(&&before[start..]) {
            continue;
        }
        let open = bang + 1 + (code[bang + 1..].len() - code[bang + 1..].trim_start().len());
        if !code[open..].starts_with(['(', '{']) {
            continue;
        }
        let mut depth = 0;
        let close = code[open..]
            .char_indices()
            .find_map(|(offset, character)| {
                match character {
                    '(' | '{' | '[' => depth += 1,
                    ')' | '}' | ']' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(open + offset)
            })
            .unwrap_or(code.len());
        let arguments = &code[open + 1..close];
        let sigil = arguments.match_indices('?').any(|(at, _)| {
            arguments[..at]
                .trim_end()
                .chars()
                .next_back()
                .is_none_or(|previous| matches!(previous, '(' | ',' | '='))
        });
        let debug_field = arguments.contains("field::debug(");
        let debug_format = literals
            .iter()
            .any(|(at, literal)| (open..close).contains(at) && formats_debug(literal));
        if sigil || debug_field || debug_format {
            let line = text[..start].matches('\n').count() + 1;
            let call = text[start..=close.min(text.len() - 1)].split_whitespace();
            found.push((line, call.collect::<Vec<_>>().join(" ")));
        }
    }
    found
}

/// Whether a format string has a placeholder in the `Debug` form (`{:?}`, `{x:?}`, `{:#x?}`).
fn formats_debug(literal: &str) -> bool {
    let mut rest = literal;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(escaped) = rest.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let Some(close) = rest.find('}') else {
            break;
        };
        if rest[..close]
            .split_once(':')
            .is_some_and(|(_, spec)| spec.ends_with('?'))
        {
            return true;
        }
        rest = &rest[close + 1..];
    }
    false
}

/// Logs are read by people: a value goes in its `Display` form (`%value`, `{value}`), never in
/// Rust's `Debug` form (`pid=Some(32405)`, `Allow { for_session: false, … }`).
#[test]
fn logs_write_no_debug_forms() {
    let mut written = Vec::new();
    for file in sources(&["crates", "src", "src-tauri/src"]) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (line, call) in debug_forms(&text) {
            written.push(format!("{}:{line}: {call}", relative(&file)));
        }
    }
    assert!(
        written.is_empty(),
        "tracing calls that log a Debug form: write `%value` or `{{value}}` with a Display \
         form instead (implement Display where there is none):\n{}",
        written.join("\n")
    );
}

#[test]
fn the_check_sees_debug_forms_but_not_the_try_operator_or_a_comment() {
    let text = "use tracing::warn;\n\
                tracing::info!(?pid, \"ready\");\n\
                warn!(\n    id,\n    reason = ?held.reason,\n    \"held\"\n);\n\
                tracing::debug!(\"took {elapsed:?}\");\n\
                tracing::error!(error = %read()?, \"at {{not:?}} {0}\", \"a?\");\n\
                // tracing::info!(?commented);\n\
                tracing::trace!(%name, value = field::debug(&value));\n\
                other::info!(?theirs);";
    let lines: Vec<usize> = debug_forms(text)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(lines, [2, 3, 8, 11]);
}
