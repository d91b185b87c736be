//! A list result (`{"tools":[…]}`) as the items it is made of, most of them a backend's own
//! definition with only its name changed. Such an item points into the backend's catalog instead
//! of holding a copy, so that every profile's lists share the one copy of each definition the
//! backend's status holds; the text is put together when a list is sent.

use std::ops::Range;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::rewrite::ObjectEntries;
use supervisor::status::Catalog;

/// Which list of a catalog an item comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemKind {
    Tool,
    Prompt,
}

/// One item of a list, as it is sent.
#[derive(Clone)]
pub(crate) enum Listed {
    /// Item `index` of a backend's catalog with the value of its name at `value` replaced by
    /// `name` (JSON).
    Renamed {
        catalog: Arc<Catalog>,
        kind: ItemKind,
        index: usize,
        value: Range<usize>,
        name: Box<str>,
    },
    /// An item rewritten in more than its name (its object's layout, or its `_meta`).
    Rewritten(String),
}

impl Listed {
    /// Item `index` of `catalog` named `name` (JSON): shared when only its name's value differs
    /// from the backend's definition, else as [`ObjectEntries::to_json`] rewrites it.
    pub(crate) fn renamed(
        catalog: &Arc<Catalog>,
        kind: ItemKind,
        index: usize,
        name: Box<RawValue>,
    ) -> Option<Listed> {
        let own = item(catalog, kind, index).get();
        let mut entries = ObjectEntries::parse(own).ok()?;
        let value = entries.get("name").and_then(|value| {
            let start = (value.get().as_ptr() as usize).checked_sub(own.as_ptr() as usize)?;
            let value = start..start + value.get().len();
            own.get(value.clone()).is_some().then_some(value)
        });
        entries.set("name", name.clone());
        let rewritten = entries.to_json();
        let name = name.get();
        let shared = value.filter(|value| {
            let (before, after) = (&own[..value.start], &own[value.end..]);
            rewritten.len() == before.len() + name.len() + after.len()
                && rewritten.starts_with(before)
                && rewritten[before.len()..].starts_with(name)
                && rewritten.ends_with(after)
        });
        Some(match shared {
            Some(value) => Listed::Renamed {
                catalog: catalog.clone(),
                kind,
                index,
                value,
                name: name.into(),
            },
            None => Listed::Rewritten(rewritten),
        })
    }

    /// The item's JSON text.
    pub(crate) fn text(&self) -> String {
        self.chunks().concat()
    }

    fn chunks(&self) -> [&str; 3] {
        match self {
            Listed::Renamed {
                catalog,
                kind,
                index,
                value,
                name,
            } => {
                let own = item(catalog, *kind, *index).get();
                [&own[..value.start], &**name, &own[value.end..]]
            }
            Listed::Rewritten(text) => [text, "", ""],
        }
    }
}

fn item(catalog: &Catalog, kind: ItemKind, index: usize) -> &RawValue {
    match kind {
        ItemKind::Tool => &catalog.tools[index],
        ItemKind::Prompt => &catalog.prompts[index],
    }
}

/// `{"FIELD":[…]}` of its items.
#[derive(Default)]
pub struct ListResult {
    field: &'static str,
    items: Vec<Listed>,
}

impl ListResult {
    pub(crate) fn new(field: &'static str, items: Vec<Listed>) -> ListResult {
        ListResult { field, items }
    }

    /// The result's JSON text.
    pub fn text(&self) -> String {
        let length = self.chunks().map(str::len).sum();
        let mut text = String::with_capacity(length);
        self.chunks().for_each(|chunk| text.push_str(chunk));
        text
    }

    fn chunks(&self) -> impl Iterator<Item = &str> {
        let items = self.items.iter().enumerate().flat_map(|(index, item)| {
            let comma = if index > 0 { "," } else { "" };
            std::iter::once(comma).chain(item.chunks())
        });
        ["{\"", self.field, "\":["]
            .into_iter()
            .chain(items)
            .chain(std::iter::once("]}"))
    }
}

impl PartialEq for ListResult {
    /// Whether both texts are the same, compared without putting either together.
    fn eq(&self, other: &ListResult) -> bool {
        let mut theirs = other.chunks().map(str::as_bytes);
        let mut rest: &[u8] = &[];
        for mut chunk in self.chunks().map(str::as_bytes) {
            while !chunk.is_empty() {
                if rest.is_empty() {
                    match theirs.next() {
                        Some(next) => rest = next,
                        None => return false,
                    }
                    continue;
                }
                let common = chunk.len().min(rest.len());
                if chunk[..common] != rest[..common] {
                    return false;
                }
                chunk = &chunk[common..];
                rest = &rest[common..];
            }
        }
        rest.is_empty() && theirs.all(|chunk| chunk.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rewrite::json_string;

    fn catalog(tools: &[&str]) -> Arc<Catalog> {
        Arc::new(Catalog {
            tools: tools
                .iter()
                .map(|tool| RawValue::from_string((*tool).to_owned()).expect("JSON"))
                .collect(),
            ..Catalog::default()
        })
    }

    #[test]
    fn a_renamed_item_is_the_backends_text_with_its_name_replaced() {
        let tools = catalog(&[
            r#"{"name":"read","inputSchema":{"type": "object"},"n":1.50}"#,
            r#"{ "name": "spaced" }"#,
            r#"{"name":"twice","name":"again"}"#,
            r#"{"title":"nameless"}"#,
        ]);
        let listed: Vec<Listed> = (0..4)
            .map(|index| {
                Listed::renamed(
                    &tools,
                    ItemKind::Tool,
                    index,
                    json_string(&format!("s__{index}")),
                )
                .expect("an object")
            })
            .collect();
        assert!(matches!(listed[0], Listed::Renamed { .. }));
        assert_eq!(
            listed[0].text(),
            r#"{"name":"s__0","inputSchema":{"type": "object"},"n":1.50}"#
        );
        assert!(matches!(listed[1], Listed::Rewritten(_)));
        assert_eq!(listed[1].text(), r#"{"name":"s__1"}"#);
        assert_eq!(listed[2].text(), r#"{"name":"s__2"}"#);
        assert_eq!(listed[3].text(), r#"{"title":"nameless","name":"s__3"}"#);
        let result = ListResult::new("tools", listed);
        let text = result.text();
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(parsed["tools"][2], json!({"name": "s__2"}));
        assert!(text.starts_with(r#"{"tools":[{"name":"s__0","#));
    }

    #[test]
    fn results_are_equal_when_their_texts_are() {
        let tools = catalog(&[r#"{"name":"a","x":1}"#, r#"{"name":"b"}"#]);
        let shared = |index, name: &str| {
            Listed::renamed(&tools, ItemKind::Tool, index, json_string(name)).expect("an object")
        };
        let owned = |text: &str| Listed::Rewritten(text.to_owned());
        let one = ListResult::new("tools", vec![shared(0, "p__a"), shared(1, "p__b")]);
        let same = ListResult::new(
            "tools",
            vec![
                owned(r#"{"name":"p__a","x":1}"#),
                owned(r#"{"name":"p__b"}"#),
            ],
        );
        assert!(one == same, "a shared item and its text");
        assert!(same == one, "and the other way round");
        let renamed = ListResult::new("tools", vec![shared(0, "p__a"), shared(1, "q__b")]);
        assert!(one != renamed);
        let shorter = ListResult::new("tools", vec![shared(0, "p__a")]);
        assert!(one != shorter, "an item more");
        assert!(shorter != one, "an item less");
        assert!(ListResult::new("tools", Vec::new()) == ListResult::new("tools", Vec::new()));
        assert!(ListResult::new("tools", Vec::new()) != ListResult::new("prompts", Vec::new()));
    }
}
