//! Paths into the frontmatter, written as authors read them: `inputs.amount.type`,
//! `steps[3] (approve).on_reject`.

/// `parent.key`, or `key` at the top.
pub(crate) fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// `parent[index]`.
pub(crate) fn index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// `steps[index] (id)`, or `steps[index]` when the step has no usable id.
pub(crate) fn step(index: usize, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("steps[{index}] ({id})"),
        None => format!("steps[{index}]"),
    }
}
