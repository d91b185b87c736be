//! The forms a server may ask for (`requestedSchema` of a form-mode `elicitation/create`): a flat
//! object of strings (with a format, or one of a list), numbers, integers, booleans, and lists of
//! choices. [`check`] says whether the dashboard can render one, and which field it cannot;
//! [`validate`] checks a person's answer against it before the server sees it.

use serde_json::{Map, Value};

/// The string formats a form can take.
const FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// What one field asks for.
enum Field<'a> {
    Text {
        format: Option<&'a str>,
        min: Option<u64>,
        max: Option<u64>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// One of `choices`.
    Choice(Vec<&'a str>),
    /// Any of `choices`, between `min` and `max` of them.
    Choices {
        choices: Vec<&'a str>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

/// Why a form cannot be rendered, or an answer does not fit it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormError {
    #[error("the form is not an object of fields")]
    NotAnObject,
    #[error("the form's properties are not an object")]
    PropertiesNotAnObject,
    /// A field the form describes but cannot render.
    #[error("field \"{name}\" {problem}")]
    Field { name: String, problem: FieldProblem },
    #[error("field \"{name}\" is required but not described")]
    Undescribed { name: String },
    /// An answer leaves out a required field.
    #[error("\"{name}\" is required")]
    Missing { name: String },
    /// An answer gives a field the form does not have.
    #[error("the form has no field \"{name}\"")]
    Unknown { name: String },
    /// An answer's value does not fit its field.
    #[error("\"{name}\" {misfit}")]
    Unfit { name: String, misfit: Misfit },
}

/// What about one field keeps the form from being rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    #[error("has a format the form does not know ({0})")]
    UnknownFormat(String),
    #[error("is a list without items")]
    ListWithoutItems,
    #[error("is a list of something other than choices")]
    ListOfOther,
    #[error("is of a type the form does not know ({0})")]
    UnknownType(String),
    #[error("has no type")]
    NoType,
    #[error("offers a choice that is not text")]
    ChoiceNotText,
    #[error("has an enum that is not a list")]
    EnumNotList,
    #[error("offers choices that are not each a text const")]
    ChoicesNotConsts,
}

/// How a value does not fit its field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Misfit {
    #[error("has {0} characters, outside its limits")]
    Length(u64),
    #[error("is not a valid {0}")]
    Format(String),
    #[error("is not a whole number")]
    NotWhole,
    #[error("is {0}, outside its limits")]
    OutOfRange(f64),
    #[error("has {0} choices, outside its limits")]
    Count(u64),
    #[error("has a choice the form does not offer")]
    NotOffered,
    #[error("is not one of its choices")]
    NotAChoice,
    #[error("is not of its type")]
    WrongType,
}

/// `Ok` when every field of `schema` can be rendered; else which field cannot, and why.
pub(crate) fn check(schema: &Value) -> Result<(), FormError> {
    fields(schema).map(|_| ())
}

/// `content` as an answer to `schema`: every required field there, every field one the form
/// has, of its type and within its limits. The reason when it is not.
pub(crate) fn validate(schema: &Value, content: &Map<String, Value>) -> Result<(), FormError> {
    let fields = fields(schema)?;
    for name in required(schema) {
        if !content.contains_key(name) {
            return Err(FormError::Missing {
                name: name.to_owned(),
            });
        }
    }
    for (name, value) in content {
        let field = fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, field)| field)
            .ok_or_else(|| FormError::Unknown { name: name.clone() })?;
        fits(field, value).map_err(|misfit| FormError::Unfit {
            name: name.clone(),
            misfit,
        })?;
    }
    Ok(())
}

fn required(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn fields(schema: &Value) -> Result<Vec<(&str, Field<'_>)>, FormError> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(FormError::NotAnObject);
    }
    let properties = match schema.get("properties") {
        None => return Ok(Vec::new()),
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err(FormError::PropertiesNotAnObject),
    };
    let fields: Vec<(&str, Field<'_>)> = properties
        .iter()
        .map(|(name, property)| {
            field(property)
                .map(|field| (name.as_str(), field))
                .map_err(|problem| FormError::Field {
                    name: name.clone(),
                    problem,
                })
        })
        .collect::<Result<_, _>>()?;
    if let Some(missing) = required(schema).find(|name| !properties.contains_key(*name)) {
        return Err(FormError::Undescribed {
            name: missing.to_owned(),
        });
    }
    Ok(fields)
}

fn field(property: &Value) -> Result<Field<'_>, FieldProblem> {
    let unsigned = |key: &str| property.get(key).and_then(Value::as_u64);
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    match property.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(choices) = choices(property) {
                return choices.map(Field::Choice);
            }
            let format = property.get("format").and_then(Value::as_str);
            if let Some(format) = format.filter(|format| !FORMATS.contains(format)) {
                return Err(FieldProblem::UnknownFormat(format.to_owned()));
            }
            Ok(Field::Text {
                format,
                min: unsigned("minLength"),
                max: unsigned("maxLength"),
            })
        }
        Some(kind @ ("number" | "integer")) => Ok(Field::Number {
            integer: kind == "integer",
            min: number("minimum"),
            max: number("maximum"),
        }),
        Some("boolean") => Ok(Field::Boolean),
        Some("array") => {
            let items = property
                .get("items")
                .ok_or(FieldProblem::ListWithoutItems)?;
            let choices = choices(items).ok_or(FieldProblem::ListOfOther)??;
            Ok(Field::Choices {
                choices,
                min: unsigned("minItems"),
                max: unsigned("maxItems"),
            })
        }
        Some(other) => Err(FieldProblem::UnknownType(other.to_owned())),
        None => Err(FieldProblem::NoType),
    }
}

/// The values of a field that is one of a list: `enum`, or `oneOf`/`anyOf` of `const`s.
/// `None` when it is not such a field.
fn choices(schema: &Value) -> Option<Result<Vec<&str>, FieldProblem>> {
    if let Some(values) = schema.get("enum") {
        let values = values.as_array().map(|values| {
            values
                .iter()
                .map(|value| value.as_str().ok_or(FieldProblem::ChoiceNotText))
                .collect::<Result<Vec<_>, _>>()
        });
        return Some(values.unwrap_or(Err(FieldProblem::EnumNotList)));
    }
    let titled = schema.get("oneOf").or_else(|| schema.get("anyOf"))?;
    let values = titled.as_array().map(|options| {
        options
            .iter()
            .map(|option| option.get("const").and_then(Value::as_str))
            .collect::<Option<Vec<_>>>()
    });
    Some(match values {
        Some(Some(values)) => Ok(values),
        _ => Err(FieldProblem::ChoicesNotConsts),
    })
}

fn fits(field: &Field<'_>, value: &Value) -> Result<(), Misfit> {
    match (field, value) {
        (Field::Text { format, min, max }, Value::String(text)) => {
            let length = text.chars().count() as u64;
            if min.is_some_and(|min| length < min) || max.is_some_and(|max| length > max) {
                return Err(Misfit::Length(length));
            }
            match format {
                Some(format) if !formatted(format, text) => {
                    Err(Misfit::Format((*format).to_owned()))
                }
                _ => Ok(()),
            }
        }
        (Field::Number { integer, min, max }, Value::Number(number)) => {
            let value = number.as_f64().unwrap_or(f64::NAN);
            if *integer && !(number.is_i64() || number.is_u64()) {
                return Err(Misfit::NotWhole);
            }
            if min.is_some_and(|min| value < min) || max.is_some_and(|max| value > max) {
                return Err(Misfit::OutOfRange(value));
            }
            Ok(())
        }
        (Field::Boolean, Value::Bool(_)) => Ok(()),
        (Field::Choice(choices), Value::String(choice)) if choices.contains(&choice.as_str()) => {
            Ok(())
        }
        (Field::Choices { choices, min, max }, Value::Array(chosen)) => {
            let count = chosen.len() as u64;
            if min.is_some_and(|min| count < min) || max.is_some_and(|max| count > max) {
                return Err(Misfit::Count(count));
            }
            match chosen.iter().all(|choice| {
                choice
                    .as_str()
                    .is_some_and(|choice| choices.contains(&choice))
            }) {
                true => Ok(()),
                false => Err(Misfit::NotOffered),
            }
        }
        (Field::Choice(_), _) => Err(Misfit::NotAChoice),
        _ => Err(Misfit::WrongType),
    }
}

/// Whether `text` looks like `format`: enough to catch a slip, not a full grammar.
fn formatted(format: &str, text: &str) -> bool {
    let digits = |part: &str, count: usize| {
        part.len() == count && part.bytes().all(|byte| byte.is_ascii_digit())
    };
    let date = |text: &str| {
        let parts: Vec<&str> = text.split('-').collect();
        matches!(parts.as_slice(), [year, month, day] if digits(year, 4) && digits(month, 2) && digits(day, 2))
    };
    match format {
        "email" => text
            .split_once('@')
            .is_some_and(|(user, domain)| !user.is_empty() && domain.contains('.')),
        "uri" => url::Url::parse(text).is_ok(),
        "date" => date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(day, time)| date(day) && time.len() >= 8 && time.as_bytes()[2] == b':'),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "minLength": 1, "maxLength": 20, "default": "Ada" },
                "email": { "type": "string", "format": "email" },
                "age": { "type": "integer", "minimum": 0, "maximum": 150 },
                "subscribe": { "type": "boolean", "default": true },
                "color": { "type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"] },
                "size": { "type": "string", "oneOf": [{ "const": "s", "title": "Small" }, { "const": "l", "title": "Large" }] },
                "toppings": { "type": "array", "items": { "type": "string", "enum": ["a", "b", "c"] }, "maxItems": 2 },
                "when": { "type": "string", "format": "date" }
            },
            "required": ["name", "age"]
        })
    }

    fn content(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    #[test]
    fn every_kind_of_field_the_spec_names_renders() {
        assert_eq!(check(&schema()), Ok(()));
        assert_eq!(check(&json!({ "type": "object" })), Ok(()));
    }

    #[test]
    fn a_form_that_cannot_be_rendered_names_its_field() {
        let nested = json!({ "type": "object", "properties": {
            "address": { "type": "object", "properties": { "street": { "type": "string" } } }
        }});
        assert_eq!(
            check(&nested).map_err(|why| why.to_string()),
            Err("field \"address\" is of a type the form does not know (object)".to_owned())
        );
        let list = json!({ "type": "object", "properties": { "tags": { "type": "array", "items": { "type": "string" } } } });
        assert_eq!(
            check(&list).map_err(|why| why.to_string()),
            Err("field \"tags\" is a list of something other than choices".to_owned())
        );
        let format = json!({ "type": "object", "properties": { "ip": { "type": "string", "format": "ipv4" } } });
        assert_eq!(
            check(&format).map_err(|why| why.to_string()),
            Err("field \"ip\" has a format the form does not know (ipv4)".to_owned())
        );
        assert!(check(&json!({ "type": "array" })).is_err());
        let undescribed = json!({ "type": "object", "properties": {}, "required": ["token"] });
        assert_eq!(
            check(&undescribed).map_err(|why| why.to_string()),
            Err("field \"token\" is required but not described".to_owned())
        );
    }

    #[test]
    fn an_answer_is_checked_against_its_form() {
        let good = content(json!({
            "name": "Ada", "email": "ada@example.com", "age": 36, "subscribe": false,
            "color": "green", "size": "l", "toppings": ["a", "c"], "when": "2026-11-28"
        }));
        assert_eq!(validate(&schema(), &good), Ok(()));
        let cases = [
            (json!({ "age": 3 }), "\"name\" is required"),
            (
                json!({ "name": "Ada", "age": 3.5 }),
                "\"age\" is not a whole number",
            ),
            (
                json!({ "name": "Ada", "age": 200 }),
                "\"age\" is 200, outside its limits",
            ),
            (
                json!({ "name": "", "age": 3 }),
                "\"name\" has 0 characters, outside its limits",
            ),
            (
                json!({ "name": "Ada", "age": 3, "email": "ada" }),
                "\"email\" is not a valid email",
            ),
            (
                json!({ "name": "Ada", "age": 3, "color": "blue" }),
                "\"color\" is not one of its choices",
            ),
            (
                json!({ "name": "Ada", "age": 3, "toppings": ["a", "b", "c"] }),
                "\"toppings\" has 3 choices, outside its limits",
            ),
            (
                json!({ "name": "Ada", "age": 3, "toppings": ["z"] }),
                "\"toppings\" has a choice the form does not offer",
            ),
            (
                json!({ "name": "Ada", "age": 3, "when": "28/11/2026" }),
                "\"when\" is not a valid date",
            ),
            (
                json!({ "name": "Ada", "age": 3, "subscribe": "yes" }),
                "\"subscribe\" is not of its type",
            ),
            (
                json!({ "name": "Ada", "age": 3, "extra": 1 }),
                "the form has no field \"extra\"",
            ),
        ];
        for (answer, why) in cases {
            assert_eq!(
                validate(&schema(), &content(answer.clone())).map_err(|why| why.to_string()),
                Err(why.to_owned()),
                "{answer}"
            );
        }
    }
}
