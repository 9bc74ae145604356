//! YAML 1.2 under the core schema, read from the `saphyr-parser` event stream into a
//! small tree that keeps where every node is.
//!
//! Why not a ready-made YAML-to-value crate: the spec requires the core schema only
//! (`yes` stays a string, `012` is the integer 12, `0b101` is a string), duplicate keys
//! refused at any depth, and bounded alias expansion. Reading events ourselves gives
//! all three in one pass, with a position for every issue (see docs/design/format.md).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};

use crate::issue::{Issue, Position};
use crate::number;

/// Deepest nesting of lists and mappings accepted.
pub const MAX_DEPTH: usize = 64;

/// Most nodes a document may hold once every alias is expanded.
pub const MAX_NODES: usize = 100_000;

/// A node of the frontmatter and where it starts in the file.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) value: Value,
    pub(crate) position: Position,
    /// A mapping or list written in flow style (`{…}`, `[…]`), where a comma ends an
    /// entry: authors meet it as a value cut at its comma.
    pub(crate) flow: bool,
    /// Nodes in this subtree once aliases are expanded, itself included.
    size: usize,
}

/// A value under the core schema.
#[derive(Debug)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    /// A finite number, as JSON number text (`012` becomes `12`, `0x1F` becomes `31`).
    Number(String),
    String(String),
    List(Vec<Rc<Node>>),
    Map(Vec<Entry>),
}

/// One key and value of a mapping. Keys are strings; other keys are refused.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) key_position: Position,
    pub(crate) value: Rc<Node>,
}

impl Value {
    /// What an author would call this kind of value, for "expected …, found …".
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "mapping",
        }
    }
}

/// The outcome of reading: a tree (when reading could finish) and every issue met.
pub(crate) struct Read {
    pub(crate) root: Option<Rc<Node>>,
    pub(crate) issues: Vec<Issue>,
}

/// Most characters outside YAML's printable set reported from one document.
const MAX_UNPRINTABLE_REPORTED: usize = 20;

/// Reads `text`, whose first line is line `first_line` of the file.
pub(crate) fn read(text: &str, first_line: usize) -> Read {
    let mut builder = Builder::new(first_line);
    builder.issues.extend(unprintable(text, first_line));
    let lines: Vec<&str> = text.lines().collect();
    // A collection starting at `{` or `[` is in flow style; the event does not say.
    let flow = |span: Span| {
        lines
            .get(span.start.line().saturating_sub(1))
            .and_then(|line| line.chars().nth(span.start.col()))
            .is_some_and(|first| first == '{' || first == '[')
    };
    let mut parser = Parser::new_from_str(text);
    let mut documents = 0;
    loop {
        let (event, span) = match parser.next_event() {
            None => break,
            Some(Ok(pair)) => pair,
            Some(Err(error)) => {
                let marker = error.marker();
                let position = builder.position_of(marker.line(), marker.col());
                builder.issues.push(Issue::at("", syntax_error(error.info()), position));
                return builder.stop();
            }
        };
        let result = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    let position = builder.position(span);
                    builder.issues.push(Issue::at(
                        "",
                        "the frontmatter holds more than one YAML document",
                        position,
                    ));
                    return builder.stop();
                }
                Ok(())
            }
            Event::Scalar(text, style, anchor, tag) => builder.scalar(&text, style, anchor, tag.as_deref(), span),
            Event::SequenceStart(anchor, tag) => builder.open(Frame::list(anchor, flow(span)), tag.as_deref(), span),
            Event::MappingStart(anchor, tag) => builder.open(Frame::map(anchor, flow(span)), tag.as_deref(), span),
            Event::SequenceEnd | Event::MappingEnd => builder.close(),
            Event::Alias(anchor) => builder.alias(anchor, span),
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => Ok(()),
        };
        if let Err(issue) = result {
            builder.issues.push(issue);
            return builder.stop();
        }
    }
    Read {
        root: builder.root,
        issues: builder.issues,
    }
}

/// YAML streams hold only printable characters (YAML 1.2.2 §5.1): tab, line feed,
/// carriage return, U+0020–U+007E, U+0085, U+00A0–U+D7FF, U+E000–U+FFFD and above.
/// The parser lets the others through, so they are refused here, each where it is.
fn unprintable(text: &str, first_line: usize) -> Vec<Issue> {
    let printable = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
            || c >= '\u{10000}'
    };
    text.split('\n')
        .enumerate()
        .flat_map(|(line, content)| {
            content
                .chars()
                .enumerate()
                .filter(|&(_, c)| !printable(c))
                .map(move |(column, c)| {
                    Issue::at(
                        "",
                        format!(
                            "the frontmatter holds the character U+{:04X}, which YAML does not allow; \
                         write it as an escape in a double-quoted string",
                            u32::from(c)
                        ),
                        Position {
                            line: first_line + line,
                            column: column + 1,
                        },
                    )
                })
        })
        .take(MAX_UNPRINTABLE_REPORTED)
        .collect()
}

/// The parser's message, with a hint where the parser is stricter than YAML 1.2:
/// saphyr-parser 0.3 refuses a tab as the only separator after `:` before a word
/// (`a:<TAB>b`), which YAML allows.
fn syntax_error(info: &str) -> String {
    if info == "':' must be followed by a valid YAML whitespace" {
        format!("YAML syntax: {info} (a tab right after ':' is not accepted here; use a space)")
    } else {
        format!("YAML syntax: {info}")
    }
}

/// A list or mapping being read.
struct Frame {
    anchor: usize,
    position: Position,
    path: String,
    items: Vec<Rc<Node>>,
    entries: Vec<Entry>,
    is_map: bool,
    flow: bool,
    /// The key read for the next mapping value; `None` inside a pair means "skip it".
    key: Option<Option<(String, Position)>>,
    seen: HashSet<String>,
    size: usize,
}

impl Frame {
    fn list(anchor: usize, flow: bool) -> Self {
        Self::new(anchor, false, flow)
    }

    fn map(anchor: usize, flow: bool) -> Self {
        Self::new(anchor, true, flow)
    }

    fn new(anchor: usize, is_map: bool, flow: bool) -> Self {
        Self {
            flow,
            anchor,
            position: Position { line: 0, column: 0 },
            path: String::new(),
            items: Vec::new(),
            entries: Vec::new(),
            is_map,
            key: None,
            seen: HashSet::new(),
            size: 1,
        }
    }
}

struct Builder {
    first_line: usize,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Rc<Node>>,
    nodes: usize,
    root: Option<Rc<Node>>,
    issues: Vec<Issue>,
}

impl Builder {
    fn new(first_line: usize) -> Self {
        Self {
            first_line,
            stack: Vec::new(),
            anchors: HashMap::new(),
            nodes: 0,
            root: None,
            issues: Vec::new(),
        }
    }

    fn stop(self) -> Read {
        Read {
            root: None,
            issues: self.issues,
        }
    }

    fn position_of(&self, line: usize, col: usize) -> Position {
        Position {
            line: line.max(1) + self.first_line - 1,
            column: col + 1,
        }
    }

    fn position(&self, span: Span) -> Position {
        self.position_of(span.start.line(), span.start.col())
    }

    /// The path of the node about to be added to the innermost open frame.
    fn child_path(&self) -> String {
        let Some(frame) = self.stack.last() else {
            return String::new();
        };
        if frame.is_map {
            match &frame.key {
                Some(Some((key, _))) => crate::path::child(&frame.path, key),
                _ => frame.path.clone(),
            }
        } else {
            format!("{}[{}]", frame.path, frame.items.len())
        }
    }

    fn count(&mut self, size: usize, position: Position) -> Result<(), Issue> {
        self.nodes = self.nodes.saturating_add(size);
        if self.nodes > MAX_NODES {
            return Err(Issue::at(
                "",
                format!("the frontmatter holds more than {MAX_NODES} values once aliases are expanded"),
                position,
            ));
        }
        Ok(())
    }

    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), Issue> {
        let position = self.position(span);
        self.count(1, position)?;
        let path = self.child_path();
        let value = match resolve(text, style, tag) {
            Ok(value) => value,
            Err(message) => {
                self.issues.push(Issue::at(path, message, position));
                Value::Null
            }
        };
        self.add(
            Rc::new(Node {
                value,
                position,
                flow: false,
                size: 1,
            }),
            anchor,
        );
        Ok(())
    }

    fn open(&mut self, mut frame: Frame, tag: Option<&Tag>, span: Span) -> Result<(), Issue> {
        let position = self.position(span);
        if self.stack.len() >= MAX_DEPTH {
            return Err(Issue::at(
                "",
                format!("the frontmatter nests deeper than {MAX_DEPTH} levels"),
                position,
            ));
        }
        self.count(1, position)?;
        frame.position = position;
        frame.path = self.child_path();
        if let Some(tag) = tag {
            let expected = if frame.is_map { "map" } else { "seq" };
            if !(tag.is_yaml_core_schema() && tag.suffix == expected) {
                self.issues.push(Issue::at(
                    frame.path.clone(),
                    format!("unsupported tag {}", show_tag(tag)),
                    position,
                ));
            }
        }
        self.stack.push(frame);
        Ok(())
    }

    fn close(&mut self) -> Result<(), Issue> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let value = if frame.is_map {
            Value::Map(frame.entries)
        } else {
            Value::List(frame.items)
        };
        self.add(
            Rc::new(Node {
                value,
                position: frame.position,
                flow: frame.flow,
                size: frame.size,
            }),
            frame.anchor,
        );
        Ok(())
    }

    fn alias(&mut self, anchor: usize, span: Span) -> Result<(), Issue> {
        let position = self.position(span);
        let Some(node) = self.anchors.get(&anchor).cloned() else {
            return Err(Issue::at("", "alias to an unknown anchor", position));
        };
        self.count(node.size, position)?;
        self.add(node, 0);
        Ok(())
    }

    /// Adds a finished node to the innermost open frame, or makes it the root.
    fn add(&mut self, node: Rc<Node>, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, Rc::clone(&node));
        }
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(node);
            return;
        };
        frame.size = frame.size.saturating_add(node.size);
        if !frame.is_map {
            frame.items.push(node);
            return;
        }
        match frame.key.take() {
            None => {
                let key = match &node.value {
                    Value::String(key) => Some((key.clone(), node.position)),
                    other => {
                        let shown = match other {
                            Value::Number(text) => format!(" {text}"),
                            Value::Bool(b) => format!(" {b}"),
                            _ => String::new(),
                        };
                        self.issues.push(Issue::at(
                            frame.path.clone(),
                            format!("key{shown} is a {}, not a string (quote it)", other.kind_name()),
                            node.position,
                        ));
                        None
                    }
                };
                if let Some((name, position)) = &key
                    && !frame.seen.insert(name.clone())
                {
                    self.issues.push(Issue::at(
                        crate::path::child(&frame.path, name),
                        format!("duplicate key {name:?}"),
                        *position,
                    ));
                    frame.key = Some(None);
                    return;
                }
                frame.key = Some(key);
            }
            Some(None) => {}
            Some(Some((key, key_position))) => frame.entries.push(Entry {
                key,
                key_position,
                value: node,
            }),
        }
    }
}

/// Resolves a scalar under the YAML 1.2 core schema.
fn resolve(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    match tag {
        Some(tag) if tag.is_yaml_core_schema() => match tag.suffix.as_str() {
            "str" => Ok(Value::String(text.to_owned())),
            "null" | "bool" | "int" | "float" => {
                let value = resolve_plain(text)?;
                // `!!float` takes the core schema's float forms, which include plain
                // decimal integers; `!!int` takes only the integer forms.
                let matches = match (&value, tag.suffix.as_str()) {
                    (Value::Null, "null") | (Value::Bool(_), "bool") => true,
                    (Value::Number(_), "int") => number::is_int_form(text),
                    (Value::Number(_), "float") => number::is_float_form(text),
                    _ => false,
                };
                if matches {
                    Ok(value)
                } else {
                    Err(format!("{text:?} is not a valid {}", show_tag(tag)))
                }
            }
            _ => Err(format!("unsupported tag {}", show_tag(tag))),
        },
        // The non-specific tag `!` makes a scalar a string.
        Some(tag) if show_tag(tag) == "!" => Ok(Value::String(text.to_owned())),
        Some(tag) => Err(format!("unsupported tag {}", show_tag(tag))),
        None if style == ScalarStyle::Plain => resolve_plain(text),
        None => Ok(Value::String(text.to_owned())),
    }
}

/// A tag as an author writes it: `!!int`, `!local`.
fn show_tag(tag: &Tag) -> String {
    if tag.is_yaml_core_schema() {
        format!("!!{}", tag.suffix)
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

/// The core schema's resolution of a plain scalar.
fn resolve_plain(text: &str) -> Result<Value, String> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    match number::from_yaml(text) {
        number::Yaml::NotANumber => Ok(Value::String(text.to_owned())),
        number::Yaml::Number(json) => Ok(Value::Number(json)),
        number::Yaml::Refused(why) => Err(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Rc<Node> {
        let read = read(text, 1);
        assert!(read.issues.is_empty(), "{:?}", read.issues);
        read.root.expect("a root")
    }

    fn scalar(text: &str) -> Value {
        let node = root(&format!("v: {text}\n"));
        let Value::Map(entries) = &node.value else {
            panic!("mapping")
        };
        match &entries[0].value.value {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Number(n) => Value::Number(n.clone()),
            Value::String(s) => Value::String(s.clone()),
            _ => panic!("scalar"),
        }
    }

    fn issues(text: &str) -> Vec<String> {
        read(text, 1)
            .issues
            .iter()
            .map(|i| {
                format!(
                    "{}@{}:{}",
                    i,
                    i.position.map_or(0, |p| p.line),
                    i.position.map_or(0, |p| p.column)
                )
            })
            .collect()
    }

    #[test]
    fn yaml_1_1_booleans_stay_strings() {
        for word in ["yes", "no", "on", "off", "y", "n", "Yes", "NO", "On"] {
            assert!(matches!(scalar(word), Value::String(s) if s == word), "{word}");
        }
        for (word, b) in [("true", true), ("True", true), ("FALSE", false)] {
            assert!(matches!(scalar(word), Value::Bool(v) if v == b), "{word}");
        }
    }

    #[test]
    fn core_schema_numbers() {
        for (text, json) in [
            ("012", "12"),
            ("00", "0"),
            ("-012", "-12"),
            ("+7", "7"),
            ("0x1F", "31"),
            ("0o17", "15"),
            ("1.50", "1.50"),
            (".5", "0.5"),
            ("1.", "1.0"),
            ("-1e3", "-1e3"),
            ("+2.5E-2", "2.5E-2"),
        ] {
            assert!(matches!(scalar(text), Value::Number(n) if n == json), "{text}");
        }
        for text in [
            "0b101",
            "+0x1F",
            "+0o12",
            "1_000",
            "2026-10-06",
            "0x",
            "1e",
            "12:30",
            "0o8",
        ] {
            assert!(matches!(scalar(text), Value::String(s) if s == text), "{text}");
        }
    }

    #[test]
    fn quoted_scalars_are_strings() {
        assert!(matches!(scalar("'012'"), Value::String(s) if s == "012"));
        assert!(matches!(scalar("\"true\""), Value::String(s) if s == "true"));
        assert!(matches!(scalar("!!str 12"), Value::String(s) if s == "12"));
        assert!(matches!(scalar("! 12"), Value::String(s) if s == "12"));
        assert!(matches!(scalar("!!int 12"), Value::Number(s) if s == "12"));
        assert!(matches!(scalar("!!int 0x1F"), Value::Number(s) if s == "31"));
        assert!(matches!(scalar("!!float 012"), Value::Number(s) if s == "12"));
        assert!(matches!(scalar("!!float 1.50"), Value::Number(s) if s == "1.50"));
    }

    #[test]
    fn nulls() {
        for text in ["", "~", "null", "NULL"] {
            assert!(matches!(scalar(text), Value::Null), "{text:?}");
        }
    }

    #[test]
    fn non_finite_and_inexact_numbers_are_refused() {
        assert_eq!(issues("v: .inf\n"), ["v: .inf is not a finite number@1:4"]);
        assert_eq!(issues("v: -.Inf\n"), ["v: -.Inf is not a finite number@1:4"]);
        assert_eq!(issues("v: .nan\n"), ["v: .nan is not a finite number@1:4"]);
        assert_eq!(
            issues("v: 1e400\n"),
            ["v: 1e400 cannot be represented exactly as a JSON number (IEEE 754 double)@1:4"]
        );
        assert_eq!(
            issues("v: 340282366920938463463374607431768211457\n"),
            [
                "v: 340282366920938463463374607431768211457 cannot be represented exactly as a JSON number (IEEE 754 double)@1:4"
            ]
        );
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        assert_eq!(issues("a: 1\na: 2\n"), ["a: duplicate key \"a\"@2:1"]);
        assert_eq!(
            issues("s:\n  - x: 1\n    y: 2\n    x: 3\n"),
            ["s[0].x: duplicate key \"x\"@4:5"]
        );
        // `yes` and "yes" are the same key under the core schema.
        assert_eq!(
            issues("m: {yes: 1, \"yes\": 2}\n"),
            ["m.yes: duplicate key \"yes\"@1:13"]
        );
    }

    #[test]
    fn non_string_keys_are_refused() {
        assert_eq!(
            issues("m:\n  1: a\n  true: b\n"),
            [
                "m: key 1 is a number, not a string (quote it)@2:3",
                "m: key true is a boolean, not a string (quote it)@3:3"
            ]
        );
        assert_eq!(issues("? [a]\n: b\n"), ["key is a list, not a string (quote it)@1:3"]);
    }

    #[test]
    fn merge_keys_are_literal_keys() {
        let node = root("a: &x {b: 1}\nc:\n  <<: *x\n");
        let Value::Map(entries) = &node.value else {
            panic!("mapping")
        };
        let Value::Map(inner) = &entries[1].value.value else {
            panic!("mapping")
        };
        assert_eq!(inner[0].key, "<<");
    }

    #[test]
    fn alias_expansion_is_bounded() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let prev = level - 1;
            text.push_str(&format!("a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
        }
        let found = issues(&text);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("the frontmatter holds more than 100000 values once aliases are expanded"),
            "{found:?}"
        );
    }

    #[test]
    fn nesting_is_bounded() {
        // Deep flow nesting stops in the scanner, deep block nesting in the builder.
        let deep = format!("v: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let read = read(&deep, 1);
        assert!(read.root.is_none());
        assert_eq!(read.issues.len(), 1, "{:?}", read.issues);
        let shallow = format!("v: {}{}\n", "[".repeat(70), "]".repeat(70));
        let found = issues(&shallow);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("the frontmatter nests deeper than 64 levels"),
            "{found:?}"
        );
        let block: String = (0..200).map(|i| format!("{}- \n", "  ".repeat(i))).collect();
        assert_eq!(issues(&block).len(), 1);
    }

    #[test]
    fn syntax_errors_and_extra_documents_stop_reading() {
        assert_eq!(read("a: [1\n", 1).issues.len(), 1);
        assert!(read("a: [1\n", 1).root.is_none());
        assert_eq!(
            issues("a: 1\n...\n---\nb: 2\n"),
            ["the frontmatter holds more than one YAML document@3:1"]
        );
    }

    #[test]
    fn a_tab_after_a_colon_gets_a_hint() {
        assert_eq!(
            issues("a:\tb\n"),
            [
                "YAML syntax: ':' must be followed by a valid YAML whitespace (a tab right after ':' is not accepted here; use a space)@1:4"
            ]
        );
        assert!(issues("a: \tb\n").is_empty());
    }

    #[test]
    fn unsupported_tags_are_refused() {
        assert_eq!(issues("v: !!binary aGk=\n"), ["v: unsupported tag !!binary@1:4"]);
        assert_eq!(issues("v: !custom x\n"), ["v: unsupported tag !custom@1:4"]);
        assert_eq!(issues("v: !!int x\n"), ["v: \"x\" is not a valid !!int@1:4"]);
        assert_eq!(issues("v: !!int 1.50\n"), ["v: \"1.50\" is not a valid !!int@1:4"]);
        assert_eq!(issues("v: !!int 1e3\n"), ["v: \"1e3\" is not a valid !!int@1:4"]);
        assert_eq!(issues("v: !!float 0xff\n"), ["v: \"0xff\" is not a valid !!float@1:4"]);
    }

    #[test]
    fn unprintable_characters_are_refused_where_they_are() {
        assert_eq!(
            issues("a: x\u{1}y\nb: \"\u{7f}\"\n"),
            [
                "the frontmatter holds the character U+0001, which YAML does not allow; write it as an escape in a double-quoted string@1:5",
                "the frontmatter holds the character U+007F, which YAML does not allow; write it as an escape in a double-quoted string@2:5",
            ]
        );
        // Escapes are fine, and so is everything printable.
        assert!(issues("a: \"\\x01 \\u007f\"\nb: \"Zürich \u{85} 東京 😀\"\n").is_empty());
    }

    #[test]
    fn positions_count_from_the_first_frontmatter_line() {
        let read = read("a: 1\na: 2\n", 2);
        assert_eq!(read.issues[0].position, Some(Position { line: 3, column: 1 }));
    }
}
