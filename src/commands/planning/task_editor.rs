//! The `$EDITOR` form of a task (`task add -e`, `task edit` with no flags): a template of the
//! fields as TOML frontmatter and the sections as Markdown, and its parse into the fields
//! `task add` and `task edit` take.

use serde_json::{Map, Value, json};

/// The template `task add -e` opens, starting from what the command line gave.
pub(super) fn add_template(title: &str, priority: &str, project: Option<&str>) -> String {
    let mut out = String::from("+++\n");
    out.push_str(&format!("title = {}\n", toml_string(title)));
    if let Some(p) = project {
        out.push_str(&format!("project = {}\n", toml_string(p)));
    }
    out.push_str(&format!(
        "priority = {}   # must, should, could or wont\n",
        toml_string(priority)
    ));
    out.push_str("estimate = \"\"   # optimistic,probable,pessimistic, e.g. \"1,2,4\"\n");
    out.push_str("depends_on = []   # task refs, e.g. [\"3\", \"core/4\"]\n");
    out.push_str("tags = []\n");
    out.push_str("+++\n\n## So that\n\n\n## Acceptance criteria\n- [ ] \n\n## Out of scope\n\n\n## Context\n\n");
    out
}

fn toml_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// `## ` sections in order: lowercased heading, lines under it.
type Sections = Vec<(String, Vec<String>)>;

/// A saved template split into its frontmatter table and its `## ` sections (lowercased
/// heading, lines under it), or what is wrong with its shape.
fn split(text: &str) -> Result<(Map<String, Value>, Sections), String> {
    let (front, body) = crate::dispatch::editor::frontmatter(text)?;
    let mut sections: Sections = Vec::new();
    for line in body.lines().skip(1) {
        if let Some(h) = line.strip_prefix("## ") {
            sections.push((h.trim().to_lowercase(), Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            lines.push(line.to_string());
        } else if !line.trim().is_empty() {
            return Err(format!(
                "`{line}` is outside a section: text goes under a `## ` heading"
            ));
        }
    }
    Ok((front, sections))
}

/// The `- ` items of a list section (`- [ ]`/`- [x]` boxes kept as `(checked, text)`).
fn items(name: &str, lines: &[String]) -> Result<Vec<(bool, String)>, String> {
    let mut out = Vec::new();
    for line in lines {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let (checked, text) = if let Some(t) = l.strip_prefix("- [ ]") {
            (false, t)
        } else if let Some(t) = l.strip_prefix("- [x]").or_else(|| l.strip_prefix("- [X]")) {
            (true, t)
        } else if let Some(t) = l.strip_prefix("- ") {
            (false, t)
        } else {
            return Err(format!("{name}: `{l}` is not a `- ` item"));
        };
        if !text.trim().is_empty() {
            out.push((checked, text.trim().to_string()));
        }
    }
    Ok(out)
}

/// The text of a prose section, trimmed.
fn prose(lines: &[String]) -> String {
    lines.join("\n").trim().to_string()
}

const SECTIONS: &str = "So that, Acceptance criteria, Out of scope, Context";

/// The sections of a saved template by name, refusing one the template does not have.
fn named(sections: Sections) -> Result<std::collections::BTreeMap<String, Vec<String>>, String> {
    let mut out = std::collections::BTreeMap::new();
    for (name, lines) in sections {
        if !["so that", "acceptance criteria", "out of scope", "context"].contains(&name.as_str()) {
            return Err(format!(
                "unknown section `## {name}` (sections: {SECTIONS})"
            ));
        }
        if out.insert(name.clone(), lines).is_some() {
            return Err(format!("section `## {name}` appears twice"));
        }
    }
    Ok(out)
}

/// The fields of a saved template, as `task add` takes them (its JSON form), or what is wrong.
pub(super) fn parse_add(text: &str) -> Result<Value, String> {
    let (front, sections) = split(text)?;
    let mut fields = Map::new();
    for (key, value) in front {
        match key.as_str() {
            "estimate" if value == json!("") => {}
            "title" | "project" | "priority" | "estimate" | "parent" | "tags" | "depends_on" => {
                fields.insert(key, value);
            }
            other => {
                return Err(format!(
                    "frontmatter: unknown field `{other}` (fields: title, project, priority, estimate, parent, depends_on, tags)"
                ));
            }
        }
    }
    let sections = named(sections)?;
    let get = |n: &str| sections.get(n).cloned().unwrap_or_default();
    let so_that = prose(&get("so that")).replace('\n', " ");
    if !so_that.is_empty() {
        fields.insert("so_that".into(), json!(so_that));
    }
    let context = prose(&get("context"));
    if !context.is_empty() {
        fields.insert("context".into(), json!(context));
    }
    let texts = |v: Vec<(bool, String)>| v.into_iter().map(|(_, t)| t).collect::<Vec<_>>();
    fields.insert(
        "accept".into(),
        json!(texts(items(
            "Acceptance criteria",
            &get("acceptance criteria")
        )?)),
    );
    fields.insert(
        "out_of_scope".into(),
        json!(texts(items("Out of scope", &get("out of scope"))?)),
    );
    Ok(Value::Object(fields))
}

/// A task as `task edit`'s template shows it.
pub(super) struct Current {
    pub reference: String,
    pub title: String,
    pub priority: String,
    /// `O,P,Q`, or empty.
    pub estimate: String,
    /// The parent's reference, or empty.
    pub parent: String,
    pub tags: Vec<String>,
    pub traces: Vec<String>,
    pub so_that: String,
    pub context: String,
    pub criteria: Vec<(bool, String)>,
    pub out_of_scope: Vec<String>,
}

fn toml_list(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|i| toml_string(i)).collect();
    format!("[{}]", parts.join(", "))
}

/// The template `task edit` opens: the task's fields and sections as they are.
pub(super) fn edit_template(c: &Current) -> String {
    let mut out = format!(
        "#! Editing {}. Existing criteria and out-of-scope items stay as they are (tick criteria with `dacli task check {} N`); add new ones below them.\n+++\n",
        c.reference, c.reference
    );
    out.push_str(&format!("title = {}\n", toml_string(&c.title)));
    out.push_str(&format!(
        "priority = {}   # must, should, could or wont\n",
        toml_string(&c.priority)
    ));
    out.push_str(&format!(
        "estimate = {}   # optimistic,probable,pessimistic, e.g. \"1,2,4\"\n",
        toml_string(&c.estimate)
    ));
    out.push_str(&format!(
        "parent = {}   # a task ref; \"\" for none\n",
        toml_string(&c.parent)
    ));
    out.push_str(&format!("tags = {}\n", toml_list(&c.tags)));
    out.push_str(&format!(
        "traces = {}   # repository paths this task touches\n",
        toml_list(&c.traces)
    ));
    out.push_str("+++\n\n## So that\n");
    if !c.so_that.is_empty() {
        out.push_str(&format!("{}\n", c.so_that));
    }
    out.push_str("\n## Acceptance criteria\n");
    for (checked, text) in &c.criteria {
        out.push_str(&format!(
            "- [{}] {text}\n",
            if *checked { "x" } else { " " }
        ));
    }
    out.push_str("- [ ] \n\n## Out of scope\n");
    for o in &c.out_of_scope {
        out.push_str(&format!("- {o}\n"));
    }
    out.push_str("\n## Context\n");
    if !c.context.is_empty() {
        out.push_str(&format!("{}\n", c.context));
    }
    out
}

/// What a saved `task edit` template changes, as the flags of `task edit` (its JSON form),
/// or what is wrong: exactly what a flag edit could do, so the edit is the same transaction.
pub(super) fn parse_edit(text: &str, c: &Current) -> Result<Value, String> {
    let (front, sections) = split(text)?;
    let mut fields = Map::new();
    fields.insert("reference".into(), json!(c.reference));
    let string = |key: &str, v: &Value| -> Result<String, String> {
        v.as_str()
            .map(|s| s.trim().to_string())
            .ok_or_else(|| format!("frontmatter: `{key}` must be a string"))
    };
    let list = |key: &str, v: &Value| -> Result<Vec<String>, String> {
        v.as_array()
            .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
            .ok_or_else(|| format!("frontmatter: `{key}` must be a list of strings"))
    };
    let mut diff = |add: &str, remove: &str, old: &[String], new: Vec<String>| {
        let added: Vec<&String> = new.iter().filter(|x| !old.contains(x)).collect();
        let gone: Vec<&String> = old.iter().filter(|x| !new.contains(x)).collect();
        if !added.is_empty() {
            fields.insert(add.into(), json!(added));
        }
        if !gone.is_empty() {
            fields.insert(remove.into(), json!(gone));
        }
    };
    let mut seen = std::collections::BTreeMap::new();
    for (key, v) in front {
        match key.as_str() {
            "title" | "priority" | "estimate" | "parent" => {
                seen.insert(key.clone(), string(&key, &v)?);
            }
            "tags" => diff("tag", "untag", &c.tags, list("tags", &v)?),
            "traces" => diff("trace", "untrace", &c.traces, list("traces", &v)?),
            other => {
                return Err(format!(
                    "frontmatter: unknown field `{other}` (fields: title, priority, estimate, parent, tags, traces)"
                ));
            }
        }
    }
    let field = |k: &str| seen.get(k).cloned().unwrap_or_default();
    if field("title") != c.title {
        fields.insert("title".into(), json!(field("title")));
    }
    if field("priority") != c.priority {
        fields.insert("priority".into(), json!(field("priority")));
    }
    let estimate = field("estimate");
    if estimate.replace(' ', "") != c.estimate {
        if estimate.is_empty() {
            return Err(format!(
                "estimate: an estimate cannot be removed, only changed (it was \"{}\")",
                c.estimate
            ));
        }
        fields.insert("estimate".into(), json!(estimate));
    }
    let parent = field("parent");
    if parent != c.parent {
        let p = if parent.is_empty() {
            "none".into()
        } else {
            parent
        };
        fields.insert("parent".into(), json!(p));
    }
    let sections = named(sections)?;
    let get = |n: &str| sections.get(n).cloned().unwrap_or_default();
    let so_that = prose(&get("so that")).replace('\n', " ");
    if so_that != c.so_that {
        fields.insert("so_that".into(), json!(so_that));
    }
    let context = prose(&get("context"));
    if context != c.context {
        fields.insert("context".into(), json!(context));
    }
    let criteria = items("Acceptance criteria", &get("acceptance criteria"))?;
    for (i, (checked, text)) in c.criteria.iter().enumerate() {
        match criteria.get(i) {
            Some((_, t)) if t != text => {
                return Err(format!(
                    "Acceptance criteria: criterion {} was `{text}`; existing criteria are never reworded or removed (add new ones below them)",
                    i + 1
                ));
            }
            None => {
                return Err(format!(
                    "Acceptance criteria: criterion {} (`{text}`) is missing; existing criteria are never removed",
                    i + 1
                ));
            }
            Some((now, _)) if now != checked => {
                return Err(format!(
                    "Acceptance criteria: criterion {} changed its box; tick criteria with `dacli task check {} {}`, not here",
                    i + 1,
                    c.reference,
                    i + 1
                ));
            }
            Some(_) => {}
        }
    }
    let new: Vec<String> = criteria
        .into_iter()
        .skip(c.criteria.len())
        .map(|(_, t)| t)
        .collect();
    if !new.is_empty() {
        fields.insert("accept".into(), json!(new));
    }
    let scope: Vec<String> = items("Out of scope", &get("out of scope"))?
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    if !scope.starts_with(&c.out_of_scope) {
        return Err(
            "Out of scope: existing items are never reworded or removed (add new ones below them)"
                .into(),
        );
    }
    let new = &scope[c.out_of_scope.len()..];
    if !new.is_empty() {
        fields.insert("out_of_scope".into(), json!(new));
    }
    Ok(Value::Object(fields))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_template_parses_back_to_its_fields() {
        let t = super::add_template("Add the shim", "must", Some("core"));
        let filled = t.replace("- [ ] \n", "- [ ] It rounds\n- [ ] It is tested\n");
        let v = super::parse_add(&filled).expect("parses");
        assert_eq!(v["title"], "Add the shim");
        assert_eq!(v["project"], "core");
        assert_eq!(v["priority"], "must");
        assert!(v.get("estimate").is_none());
        assert_eq!(
            v["accept"],
            serde_json::json!(["It rounds", "It is tested"])
        );
        assert!(super::parse_add("title = 1").is_err());
        assert!(
            super::parse_add(&t.replace("tags = []", "color = 3"))
                .expect_err("unknown")
                .contains("unknown field `color`")
        );
    }
}
