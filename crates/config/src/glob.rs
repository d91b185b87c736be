//! The glob patterns of tool filters and profiles: `*` matches any run of characters, possibly
//! empty, `?` exactly one, and every other character itself, case-sensitively; a pattern must
//! match the whole name.

/// Glob match with `*` (any run, possibly empty) and `?` (one char); whole-string match;
/// case-sensitive.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    // Names are ASCII nearly always: then bytes are characters, and nothing is allocated.
    if pattern.is_ascii() && text.is_ascii() {
        return glob_match_units(pattern.as_bytes(), text.as_bytes(), b'*', b'?');
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    glob_match_units(&pattern, &text, '*', '?')
}

fn glob_match_units<T: Copy + PartialEq>(pattern: &[T], text: &[T], star: T, one: T) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last `*` seen and the text position it is currently thought to stop at. Only the
    // last star ever needs to grow: whatever an earlier star would absorb instead, the last
    // one can absorb as well, so the loop runs in O(pattern × text) at worst and in linear
    // time for patterns like `a*a*a*b`.
    let mut last_star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(&c) if c == star => {
                last_star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == one || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match last_star {
                Some((star_at, star_end)) => {
                    // Let the star take one more character and try the rest again.
                    last_star = Some((star_at, star_end + 1));
                    p = star_at + 1;
                    t = star_end + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == star)
}
