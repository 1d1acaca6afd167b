//! The type model a schema is lowered to: as much of TypeScript's types as a
//! stub needs, with unions and intersections kept flat and de-duplicated.
//! Building it is `lowering`'s job, printing it `typescript`'s.

use serde_json::Value;

use crate::canonical::to_canonical_json;

/// Longest literal type (JSON text of a `const`/`enum` value).
const MAX_LITERAL_CHARS: usize = 200;

/// A TypeScript type, as far as a stub needs one.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty {
    Unknown,
    Never,
    Null,
    Boolean,
    Number,
    String,
    /// JSON text of a value; valid TypeScript literal type syntax.
    Literal(String),
    Array(Box<Ty>),
    Tuple(Vec<Ty>),
    Object(Object),
    Union(Vec<Ty>),
    Intersection(Vec<Ty>),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Object {
    /// Required properties first, each group sorted by name.
    pub(super) props: Vec<Prop>,
    /// `[key: string]: T`.
    pub(super) index: Option<Box<Ty>>,
    /// Properties left out (too many, or names too long); implies `index`.
    pub(super) omitted: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Prop {
    pub(super) name: String,
    pub(super) optional: bool,
    pub(super) ty: Ty,
    /// Description and notes for JSDoc (may be empty).
    pub(super) doc: String,
}

impl Object {
    pub(super) fn record(value: Ty) -> Object {
        Object {
            props: Vec::new(),
            index: Some(Box::new(value)),
            omitted: 0,
        }
    }

    pub(super) fn sort(&mut self) {
        self.props
            .sort_by(|a, b| (a.optional, &a.name).cmp(&(b.optional, &b.name)));
    }
}

/// Flattened, de-duplicated union; `unknown` absorbs everything, `never` vanishes.
pub(super) fn union(members: Vec<Ty>) -> Ty {
    let mut out: Vec<Ty> = Vec::new();
    let mut pending = members;
    pending.reverse();
    while let Some(member) = pending.pop() {
        match member {
            Ty::Unknown => return Ty::Unknown,
            Ty::Never => {}
            Ty::Union(inner) => pending.extend(inner.into_iter().rev()),
            other => {
                if !out.contains(&other) {
                    out.push(other);
                }
            }
        }
    }
    match out.len() {
        0 => Ty::Never,
        1 => out.pop().unwrap_or(Ty::Never),
        _ => Ty::Union(out),
    }
}

/// Flattened intersection; `unknown` members vanish, plain objects are merged.
pub(super) fn intersection(members: Vec<Ty>) -> Ty {
    let mut out: Vec<Ty> = Vec::new();
    let mut pending = members;
    pending.reverse();
    while let Some(member) = pending.pop() {
        match member {
            Ty::Unknown => {}
            Ty::Never => return Ty::Never,
            Ty::Intersection(inner) => pending.extend(inner.into_iter().rev()),
            other => {
                if !out.contains(&other) {
                    out.push(other);
                }
            }
        }
    }
    let mergeable = out.len() > 1
        && out
            .iter()
            .all(|t| matches!(t, Ty::Object(o) if o.index.is_none() && o.omitted == 0));
    if mergeable {
        let mut merged = Object::default();
        for member in out {
            let Ty::Object(object) = member else { continue };
            for prop in object.props {
                match merged.props.iter_mut().find(|p| p.name == prop.name) {
                    Some(existing) => {
                        existing.optional &= prop.optional;
                        if existing.ty != prop.ty {
                            let ty = std::mem::replace(&mut existing.ty, Ty::Unknown);
                            existing.ty = intersection(vec![ty, prop.ty]);
                        }
                        if existing.doc.is_empty() {
                            existing.doc = prop.doc;
                        }
                    }
                    None => merged.props.push(prop),
                }
            }
        }
        merged.sort();
        return Ty::Object(merged);
    }
    match out.len() {
        0 => Ty::Unknown,
        1 => out.pop().unwrap_or(Ty::Unknown),
        _ => Ty::Intersection(out),
    }
}

/// The type of a literal JSON value; over-long literals degrade to their base type.
pub(super) fn literal(value: &Value) -> Ty {
    let text = to_canonical_json(value);
    if text.chars().count() <= MAX_LITERAL_CHARS {
        Ty::Literal(text)
    } else {
        base_type(value)
    }
}

pub(super) fn base_type(value: &Value) -> Ty {
    match value {
        Value::Null => Ty::Null,
        Value::Bool(_) => Ty::Boolean,
        Value::Number(_) => Ty::Number,
        Value::String(_) => Ty::String,
        Value::Array(_) => Ty::Array(Box::new(Ty::Unknown)),
        Value::Object(_) => Ty::Object(Object::record(Ty::Unknown)),
    }
}
