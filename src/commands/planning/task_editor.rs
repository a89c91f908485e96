//! The `$EDITOR` form of a task (`task add -e`): a template of the fields as TOML frontmatter
//! and the sections as Markdown, and its parse into the fields `task add` takes.

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

/// The fields of a saved template, as `task add` takes them (its JSON form), or what is wrong.
pub(super) fn parse_add(text: &str) -> Result<Value, String> {
    let rest = text
        .trim_start()
        .strip_prefix("+++\n")
        .ok_or("the file must start with the `+++` frontmatter line")?;
    let (front, body) = rest
        .split_once("\n+++")
        .ok_or("the frontmatter has no closing `+++` line")?;
    let front: Value = toml_edit::de::from_str(front)
        .map_err(|e| format!("frontmatter: {}", e.to_string().replace('\n', " ").trim()))?;
    let Value::Object(front) = front else {
        return Err("frontmatter: not a table".into());
    };
    let mut fields = Map::new();
    for (key, value) in front {
        match key.as_str() {
            "estimate" if value == json!("") => {}
            "title" | "project" | "priority" | "estimate" | "parent" | "tags" => {
                fields.insert(key, value);
            }
            "depends_on" => {
                fields.insert(key, value);
            }
            other => {
                return Err(format!(
                    "frontmatter: unknown field `{other}` (fields: title, project, priority, estimate, parent, depends_on, tags)"
                ));
            }
        }
    }
    let mut section = String::new();
    let mut so_that = Vec::new();
    let mut context = Vec::new();
    let mut accept = Vec::new();
    let mut out_of_scope = Vec::new();
    for line in body.lines().skip(1) {
        if let Some(h) = line.strip_prefix("## ") {
            section = h.trim().to_lowercase();
            continue;
        }
        let item = line
            .trim()
            .strip_prefix("- [ ]")
            .or_else(|| line.trim().strip_prefix("- [x]"))
            .or_else(|| line.trim().strip_prefix("- "))
            .map(str::trim);
        match section.as_str() {
            "so that" if !line.trim().is_empty() => so_that.push(line.trim().to_string()),
            "acceptance criteria" => match item {
                Some(i) if !i.is_empty() => accept.push(i.to_string()),
                Some(_) => {}
                None if line.trim().is_empty() => {}
                None => return Err(format!("Acceptance criteria: `{line}` is not a `- ` item")),
            },
            "out of scope" => match item {
                Some(i) if !i.is_empty() => out_of_scope.push(i.to_string()),
                Some(_) => {}
                None if line.trim().is_empty() => {}
                None => return Err(format!("Out of scope: `{line}` is not a `- ` item")),
            },
            "context" => context.push(line),
            "" | "so that" => {}
            other => {
                return Err(format!(
                    "unknown section `## {other}` (sections: So that, Acceptance criteria, Out of scope, Context)"
                ));
            }
        }
    }
    if !so_that.is_empty() {
        fields.insert("so_that".into(), json!(so_that.join(" ")));
    }
    let context = context.join("\n").trim().to_string();
    if !context.is_empty() {
        fields.insert("context".into(), json!(context));
    }
    fields.insert("accept".into(), json!(accept));
    fields.insert("out_of_scope".into(), json!(out_of_scope));
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
