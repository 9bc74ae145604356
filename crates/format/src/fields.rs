//! `inputs` and `output`: field declarations (spec §2.3).

use crate::document::{Field, FieldType, Fields};
use crate::json::to_json;
use crate::read::Reader;
use crate::values::{is_date, is_datetime};
use crate::yaml::{Node, Value};

const FIELD_KEYS: [&str; 5] = ["type", "description", "optional", "one_of", "items"];

/// A map of field name to field.
pub(crate) fn fields(r: &mut Reader<'_>, node: &Node, path: &str) -> Fields {
    let Some(object) = r.mapping(node, path) else {
        return Fields::default();
    };
    let mut fields = Vec::new();
    for (name, value, child) in object.entries() {
        if name.is_empty() {
            r.issues.push(path, "a field name is empty");
            continue;
        }
        if let Some(field) = field(r, value, &child) {
            fields.push((name.to_owned(), field));
        }
    }
    Fields(fields)
}

/// A type name or a field object.
fn field(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Field> {
    if let Value::String(name) = &node.value {
        return type_name(r, name, path).map(Field::of);
    }
    if !matches!(node.value, Value::Map(_)) {
        r.issues.push(
            path,
            format!(
                "expected a type name or a field object, found {}",
                node.value.kind_name()
            ),
        );
        return None;
    }
    let object = r.object(node, path, &FIELD_KEYS)?;
    let ty = object
        .required(r, "type")
        .and_then(|(value, child)| r.string(value, &child).and_then(|name| type_name(r, name, &child)));
    let description = object
        .get("description")
        .and_then(|(value, child)| r.string(value, &child).map(str::to_owned));
    let optional = object
        .get("optional")
        .and_then(|(value, child)| r.boolean(value, &child))
        .unwrap_or(false);
    let items = object.get("items").and_then(|(value, child)| {
        if ty.is_some_and(|ty| ty != FieldType::List) {
            r.issues.push(&child, "allowed only when type is list");
            return None;
        }
        field(r, value, &child).map(Box::new)
    });
    let one_of = object
        .get("one_of")
        .and_then(|(value, child)| one_of(r, value, &child, ty));
    Some(Field {
        ty: ty?,
        description,
        optional,
        one_of,
        items,
    })
}

fn type_name(r: &mut Reader<'_>, name: &str, path: &str) -> Option<FieldType> {
    let ty = FieldType::from_name(name);
    if ty.is_none() {
        r.issues.push(
            path,
            format!(
                "{name:?} is not a type; expected one of {}",
                FieldType::ALL.map(FieldType::name).join(", ")
            ),
        );
    }
    ty
}

/// `one_of`: one or more values, each of the field's type.
fn one_of(r: &mut Reader<'_>, node: &Node, path: &str, ty: Option<FieldType>) -> Option<Vec<serde_json::Value>> {
    if let Some(ty @ (FieldType::List | FieldType::Object)) = ty {
        let hint = if ty == FieldType::List {
            " (put it on items)"
        } else {
            ""
        };
        r.issues.push(path, format!("not allowed on a {ty} field{hint}"));
        return None;
    }
    let values = r.list(node, path)?;
    if values.is_empty() {
        r.issues.push(path, "needs at least one value");
    }
    let ty = ty?;
    for (index, value) in values.iter().enumerate() {
        let fits = match (&value.value, ty) {
            (Value::String(_), FieldType::String | FieldType::Person) => true,
            (Value::Number(_), FieldType::Number) => true,
            (Value::Bool(_), FieldType::Boolean) => true,
            (Value::String(text), FieldType::Date) => is_date(text),
            (Value::String(text), FieldType::Datetime) => is_datetime(text),
            _ => false,
        };
        if !fits {
            let expected = match ty {
                FieldType::Date => "a date (YYYY-MM-DD)".to_owned(),
                FieldType::Datetime => "an RFC 3339 datetime with an offset".to_owned(),
                other => other.name().to_owned(),
            };
            r.issues.push(
                crate::path::index(path, index),
                format!("expected {expected} like the field, found {}", show(value)),
            );
        }
    }
    Some(values.iter().map(|value| to_json(value)).collect())
}

/// A scalar as it reads in an issue.
fn show(node: &Node) -> String {
    match &node.value {
        Value::String(text) => format!("{text:?}"),
        Value::Number(text) => format!("number {text}"),
        Value::Bool(value) => format!("boolean {value}"),
        other => other.kind_name().to_owned(),
    }
}
