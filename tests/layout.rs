//! The shape of `src/` that ARCHITECTURE.md promises, checked on every run: no module imports
//! in a cycle, a file past 900 lines has its reason written down, and a method's name is written
//! in `src/wire/method.rs` alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a file in `src/` grows before ARCHITECTURE.md must say why it is one file.
const LONGEST: usize = 900;

/// Every module of the crate: its path (`hub::call`) and its file.
fn modules() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], found: &mut BTreeMap<String, PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
            let path = entry.path();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let mut module = prefix.to_vec();
            if path.is_dir() {
                module.push(stem);
                walk(&path, &module, found);
                continue;
            }
            if path.extension().is_none_or(|extension| extension != "rs") {
                continue;
            }
            if !matches!(stem.as_str(), "mod" | "lib" | "main") {
                module.push(stem);
            }
            found.insert(module.join("::"), path);
        }
    }
    let mut found = BTreeMap::new();
    walk(&source(), &[], &mut found);
    found
}

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The text of a file without comments, string and character literals (which may hold `::`).
fn code(text: &str) -> String {
    scan(text, |_, _| {})
}

/// The text of a file without comments, string and character literals; each string literal
/// (raw and byte strings too) goes to `literal` with where it starts, quotes and all.
fn scan(text: &str, mut literal: impl FnMut(usize, &str)) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        let rest = &text[at..];
        if rest.starts_with("//") {
            at += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            at += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if let Some(raw) = raw_string_end(rest) {
            literal(at, &rest[..raw]);
            at += raw;
            out.push(' ');
        } else if rest.starts_with('"') {
            let mut end = 1;
            while end < rest.len() {
                match rest.as_bytes()[end] {
                    b'\\' => end += 2,
                    b'"' => break,
                    _ => end += 1,
                }
            }
            literal(at, &rest[..(end + 1).min(rest.len())]);
            at += end + 1;
            out.push(' ');
        } else if let Some(length) = char_literal(rest) {
            at += length;
            out.push(' ');
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

/// The paths a file names that start at `crate::`, `super::` or `self::`, with `use` groups
/// (`use crate::a::{b, c::d}`) spread out, each as the module path it reaches into.
fn named_paths(module: &str, code: &str) -> Vec<Vec<String>> {
    let here: Vec<String> = match module.is_empty() {
        true => Vec::new(),
        false => module.split("::").map(str::to_owned).collect(),
    };
    let tokens = tokens(code);
    let mut paths = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let start = tokens[at].as_str();
        let preceded_by_path = at > 0 && tokens[at - 1] == "::";
        if !preceded_by_path && matches!(start, "crate" | "super" | "self") {
            let (mut spread, end) = path_tree(&tokens, at);
            for path in spread.drain(..) {
                if let Some(absolute) = absolute(&here, &path) {
                    paths.push(absolute);
                }
            }
            at = end;
        } else {
            at += 1;
        }
    }
    paths
}

/// Identifiers, `::`, and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut characters = code.chars().peekable();
    while let Some(&character) = characters.peek() {
        if character.is_alphanumeric() || character == '_' {
            let mut word = String::new();
            while let Some(&next) = characters.peek() {
                if !(next.is_alphanumeric() || next == '_') {
                    break;
                }
                word.push(next);
                characters.next();
            }
            tokens.push(word);
        } else if character == ':' {
            characters.next();
            if characters.peek() == Some(&':') {
                characters.next();
                tokens.push("::".to_owned());
            }
        } else {
            characters.next();
            if !character.is_whitespace() {
                tokens.push(character.to_string());
            }
        }
    }
    tokens
}

/// The paths of one path or `use` tree starting at `tokens[at]`, and where it ends.
fn path_tree(tokens: &[String], mut at: usize) -> (Vec<Vec<String>>, usize) {
    let mut stem = vec![tokens[at].clone()];
    at += 1;
    while at + 1 < tokens.len() && tokens[at] == "::" {
        let next = &tokens[at + 1];
        if next == "{" {
            let mut paths = Vec::new();
            at += 2;
            while at < tokens.len() && tokens[at] != "}" {
                if tokens[at] == "," {
                    at += 1;
                    continue;
                }
                let (branches, end) = path_tree(tokens, at);
                for branch in branches {
                    paths.push(stem.iter().cloned().chain(branch).collect());
                }
                at = end;
                while at < tokens.len() && tokens[at] != "," && tokens[at] != "}" {
                    at += 1;
                }
            }
            return (paths, at + 1);
        }
        if !next.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            break;
        }
        stem.push(next.clone());
        at += 2;
    }
    (vec![stem], at)
}

/// `path` made absolute from the module `here`.
fn absolute(here: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = here.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        base.pop()?;
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The deepest module of the crate that `path` reaches into.
fn owner(path: &[String], known: &BTreeMap<String, PathBuf>) -> Option<String> {
    (0..=path.len())
        .rev()
        .map(|length| path[..length].join("::"))
        .find(|module| known.contains_key(module))
}

fn is_within(module: &str, ancestor: &str) -> bool {
    ancestor.is_empty() || module == ancestor || module.starts_with(&format!("{ancestor}::"))
}

/// The text of a module's file without its tests, which may reach anywhere and write messages
/// as they are on the wire: `None` for a `tests` module, and a file's own `mod tests`, which
/// comes last, left out.
fn outside_tests(module: &str, file: &Path) -> Option<String> {
    if module.split("::").any(|part| part == "tests") {
        return None;
    }
    let text = std::fs::read_to_string(file).expect("a source file");
    let end = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    Some(text[..end].to_owned())
}

/// A file's path within `src/`, with forward slashes.
fn within_source(file: &Path) -> String {
    file.strip_prefix(source())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// Which modules each module imports from, leaving out its own ancestors and descendants (a
/// folder's `mod.rs` holds what its files share, and declares them).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let known = modules();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &known {
        let Some(text) = outside_tests(module, file) else {
            continue;
        };
        let targets = edges.entry(module.clone()).or_default();
        for path in named_paths(module, &code(&text)) {
            let Some(target) = owner(&path, &known) else {
                continue;
            };
            if !is_within(module, &target) && !is_within(&target, module) {
                targets.insert(target);
            }
        }
    }
    edges
}

/// Every group of modules that import one another in a circle (Tarjan's strongly connected
/// components of more than one module).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, module: &'a str) {
            let number = self.index.len();
            self.index.insert(module, number);
            self.low.insert(module, number);
            self.stack.push(module);
            self.on_stack.insert(module);
            for target in self.edges.get(module).into_iter().flatten() {
                let target = target.as_str();
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[module].min(self.low[target]);
                    self.low.insert(module, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[module].min(self.index[target]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let mut group = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    group.push(member.to_owned());
                    if member == module {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for module in edges.keys() {
        if !walk.index.contains_key(module.as_str()) {
            walk.visit(module);
        }
    }
    walk.found
}

#[test]
fn no_module_imports_in_a_cycle() {
    let edges = imports();
    let found: Vec<String> = cycles(&edges)
        .into_iter()
        .map(|group| {
            let members: BTreeSet<&String> = group.iter().collect();
            let links: Vec<String> = group
                .iter()
                .flat_map(|from| {
                    edges[from]
                        .iter()
                        .filter(|to| members.contains(to))
                        .map(move |to| format!("{from} → {to}"))
                })
                .collect();
            links.join(", ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules that import in a cycle:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_cycle_and_a_use_group() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    edges.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    edges.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    edges.insert("d".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(cycles(&edges), vec![vec!["a", "b", "c"]]);
    let tokens = tokens("use crate::hub::{call::{run, Plan}, names};");
    let (paths, _) = path_tree(&tokens, 1);
    assert_eq!(
        paths,
        vec![
            vec!["crate", "hub", "call", "run"],
            vec!["crate", "hub", "call", "Plan"],
            vec!["crate", "hub", "names"],
        ]
    );
    assert_eq!(code(r#"let a = "crate::x"; // super::y"#), "let a =  ; ");
    assert_eq!(
        code("fn f<'a>(x: &'a str) -> char { '\"' }"),
        "fn f<'a>(x: &'a str) -> char {   }"
    );
}

/// The one file of `src/` that writes methods' names; everything else uses its `Method`.
const METHOD_FILE: &str = "wire/method.rs";

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
    for (module, file) in &modules() {
        let name = within_source(file);
        if name == METHOD_FILE {
            continue;
        }
        let Some(text) = outside_tests(module, file) else {
            continue;
        };
        for (line, literal) in method_names(&text) {
            written.push(format!("src/{name}:{line}: {literal}"));
        }
    }
    assert!(
        written.is_empty(),
        "method names written outside src/{METHOD_FILE}: match on `Method`, or write \
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

/// The paragraph of ARCHITECTURE.md that names the files over [`LONGEST`] lines, with why.
fn long_files_paragraph() -> String {
    let architecture =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md");
    let start = architecture
        .find(&format!("No file in `src/` is over {LONGEST} lines"))
        .expect("ARCHITECTURE.md says which files are over the limit");
    let rest = &architecture[start..];
    rest[..rest.find("\n\n").unwrap_or(rest.len())].to_owned()
}

#[test]
fn a_long_file_has_its_reason_written_down() {
    let paragraph = long_files_paragraph();
    let unexplained: Vec<String> = modules()
        .values()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file)
                .expect("a source file")
                .lines()
                .count();
            let name = within_source(file);
            (lines > LONGEST && !paragraph.contains(&format!("`{name}`")))
                .then(|| format!("{name}: {lines} lines"))
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "files over {LONGEST} lines that ARCHITECTURE.md's paragraph on them does not name: \
         {unexplained:#?}"
    );
}
