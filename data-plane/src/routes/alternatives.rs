//! Request bodies whose fields are alternatives, as the OpenAPI document states them. The derived
//! schema of such a body lists every field as optional, which says less than the route checks
//! (publish takes exactly one of `body` and `body_base64`; a dead-letter selection exactly one of
//! `ids`, `reason` and `all: true`), so a client or a fuzzer following it sends mostly refused
//! requests. [`one_of`] rewrites the component as `oneOf` its alternatives: each branch is the
//! derived object with its own field required (and not null), the other alternatives' fields
//! absent or null, and any field narrowed to what the branch accepts. Fields outside every
//! alternative keep their derived schema in each branch; unknown fields stay allowed, as the
//! routes ignore them.

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{OpenApi, RefOr};

/// One accepted combination of fields.
pub(super) struct Branch {
    pub title: &'static str,
    /// Present and not null.
    pub requires: &'static str,
    /// Absent or null.
    pub absent: &'static [&'static str],
    /// Replaced by a narrower schema in this branch.
    pub narrowed: Vec<(&'static str, Schema)>,
}

/// Rewrites component `name` of `doc`, an object schema, as `oneOf` the `branches`.
///
/// # Panics
/// When the component is missing or not an object: the document is built at start-up and a test
/// builds it, so a renamed type fails there.
pub(super) fn one_of(doc: &mut OpenApi, name: &str, branches: Vec<Branch>) {
    let schemas = &mut doc.components.as_mut().expect("the document has components").schemas;
    let component = schemas.get_mut(name).unwrap_or_else(|| panic!("no component {name}"));
    let RefOr::T(Schema::Object(object)) = component else { panic!("component {name} is not an object") };
    let description = object.description.take();
    let mut alternatives = OneOfBuilder::new().description(description);
    for branch in branches {
        let mut variant = object.clone();
        variant.title = Some(branch.title.to_owned());
        if let Some(RefOr::T(field)) = variant.properties.get_mut(branch.requires) {
            not_null(field);
        }
        variant.required.push(branch.requires.to_owned());
        for field in branch.absent {
            variant.properties.insert((*field).to_owned(), ObjectBuilder::new().schema_type(Type::Null).into());
        }
        for (field, mut schema) in branch.narrowed {
            if let Some(RefOr::T(derived)) = variant.properties.get(field) {
                keep_description(derived, &mut schema);
            }
            variant.properties.insert(field.to_owned(), schema.into());
        }
        alternatives = alternatives.item(Schema::Object(variant));
    }
    *component = RefOr::T(Schema::OneOf(alternatives.build()));
}

/// The only values a field may take in a branch, and what they mean there.
pub(super) fn only<const N: usize>(description: &str, values: [serde_json::Value; N]) -> Schema {
    let schema = ObjectBuilder::new().schema_type(SchemaType::AnyValue).description(Some(description));
    schema.enum_values(Some(values)).build().into()
}

/// An array of 1 to `max` strings matching `pattern`.
pub(super) fn strings(pattern: &str, max: usize) -> Schema {
    let item = ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern));
    ArrayBuilder::new().items(item).min_items(Some(1)).max_items(Some(max)).build().into()
}

/// A narrowed field says what the derived one said.
fn keep_description(derived: &Schema, narrowed: &mut Schema) {
    let from = match derived {
        Schema::Object(object) => &object.description,
        Schema::Array(array) => &array.description,
        _ => return,
    };
    let to = match narrowed {
        Schema::Object(object) => &mut object.description,
        Schema::Array(array) => &mut array.description,
        _ => return,
    };
    if to.is_none() {
        to.clone_from(from);
    }
}

/// Drops `null` from a field's types: `Option<T>` derives `[T, "null"]`.
fn not_null(schema: &mut Schema) {
    let types = match schema {
        Schema::Object(object) => &mut object.schema_type,
        Schema::Array(array) => &mut array.schema_type,
        _ => return,
    };
    if let SchemaType::Array(list) = types {
        list.retain(|t| *t != Type::Null);
        if let [only] = list.as_slice() {
            *types = SchemaType::Type(only.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use utoipa::openapi::{ComponentsBuilder, OpenApiBuilder};

    #[test]
    fn a_component_becomes_one_of_its_alternatives() {
        let object = ObjectBuilder::new()
            .description(Some("Pick one."))
            .property("a", ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null])))
            .property("b", ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Boolean, Type::Null])))
            .property("c", ObjectBuilder::new().schema_type(Type::Integer));
        let mut doc =
            OpenApiBuilder::new().components(Some(ComponentsBuilder::new().schema("Pick", object).build())).build();
        one_of(
            &mut doc,
            "Pick",
            vec![
                Branch { title: "a", requires: "a", absent: &["b"], narrowed: vec![] },
                Branch {
                    title: "b",
                    requires: "b",
                    absent: &["a"],
                    narrowed: vec![("b", only("Yes.", [json!(true)]))],
                },
            ],
        );
        let schema = serde_json::to_value(&doc.components.unwrap().schemas["Pick"]).unwrap();
        assert_eq!(schema["description"], "Pick one.");
        let [a, b] = [&schema["oneOf"][0], &schema["oneOf"][1]];
        assert_eq!(a["required"], json!(["a"]));
        assert_eq!(a["properties"]["a"]["type"], "string");
        assert_eq!(a["properties"]["b"]["type"], "null");
        assert_eq!(a["properties"]["c"]["type"], "integer");
        assert_eq!(b["properties"]["b"], json!({"description": "Yes.", "enum": [true]}));
        assert_eq!(b["properties"]["a"]["type"], "null");
        assert_eq!(b["description"], Value::Null);
    }
}
