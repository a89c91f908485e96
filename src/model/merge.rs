//! The three-way merge of one canonical record file rewritten in two clones (FORMAT §22):
//! what the `merge.dacli.driver` git runs produces, field by field, so that no workspace
//! file ever holds a conflict marker.
//!
//! Rules, for frontmatter keys and body sections alike: a side that left a part as the
//! ancestor had it takes the other side's; parts both sides changed alike are kept; parts
//! both changed differently go to the side with the greater `rev` (the later write), with
//! two exceptions that the event log decides:
//! - `## Log` is the union of both sides' lines, in time order (a line is never lost, and
//!   two clones applying one event wrote the same line);
//! - `assignee` goes to the side whose assignment came from the earlier `claimed` event
//!   (FORMAT §13.2: of competing claims the earlier ULID wins);
//! - acceptance criteria with the same texts on both sides are checked when either side
//!   checked them, unless one side reopened the task (its greater `generation` wins).
//!
//! `rev` itself becomes the greater of the two, so every clone merging the same pair writes
//! the same bytes.

use toml_edit::{DocumentMut, Item};

/// A record file split at its frontmatter fences.
struct Parts {
    front: DocumentMut,
    body: String,
}

fn split(text: &str) -> Option<Parts> {
    let rest = text.strip_prefix("+++\n")?;
    let end = rest
        .find("\n+++\n")
        .map(|i| (i, i + 5))
        .or_else(|| rest.strip_suffix("\n+++").map(|f| (f.len(), rest.len())))?;
    let front: DocumentMut = rest[..end.0].parse().ok()?;
    let body = rest[end.1..].trim_start_matches('\n').to_string();
    Some(Parts { front, body })
}

fn is_conflicted(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || l == "=======")
}

/// Merges `ours` and `theirs` against their common `base` (empty when both added the file).
/// `None` when either side is not a frontmatter record dacli can merge (the caller keeps
/// both versions).
pub fn merge_record(base: &str, ours: &str, theirs: &str) -> Option<String> {
    if ours == theirs {
        return Some(ours.to_string());
    }
    if [base, ours, theirs].iter().any(|t| is_conflicted(t)) {
        return None;
    }
    let o = split(ours)?;
    let t = split(theirs)?;
    let b = split(base).unwrap_or(Parts {
        front: DocumentMut::new(),
        body: String::new(),
    });
    let rev = |p: &Parts| {
        p.front
            .get("rev")
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    // The later write leads (its key order and layout are kept), so both clones of a pair
    // merge it to the same bytes whichever side each calls its own.
    let (o, t) = if (rev(&t), theirs) > (rev(&o), ours) {
        (t, o)
    } else {
        (o, t)
    };
    let later_is_theirs = false;
    let front = merge_front(&b, &o, &t, later_is_theirs);
    let body = merge_body(&b, &o, &t, later_is_theirs);
    let front_text = front.to_string();
    let mut out = format!("+++\n{}", front_text);
    if !front_text.ends_with('\n') && !front_text.is_empty() {
        out.push('\n');
    }
    out.push_str("+++\n");
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body.trim_end_matches('\n'));
        out.push('\n');
    }
    Some(out)
}

fn item_text(i: Option<&Item>) -> Option<String> {
    i.map(|i| i.to_string().trim().to_string())
}

fn merge_front(b: &Parts, o: &Parts, t: &Parts, later_is_theirs: bool) -> DocumentMut {
    let mut out = o.front.clone();
    let keys: Vec<String> = o
        .front
        .iter()
        .map(|(k, _)| k.to_string())
        .chain(t.front.iter().map(|(k, _)| k.to_string()))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for key in keys {
        if !seen.insert(key.clone()) {
            continue;
        }
        let bv = item_text(b.front.get(&key));
        let ov = item_text(o.front.get(&key));
        let tv = item_text(t.front.get(&key));
        let take_theirs = if ov == tv || tv == bv {
            false
        } else if ov == bv {
            true
        } else if key == "rev" {
            tv > ov
        } else if key == "assignee" {
            earlier_claim_is_theirs(o, t).unwrap_or(later_is_theirs)
        } else if key == "generation" {
            number(t.front.get(&key)) > number(o.front.get(&key))
        } else {
            later_is_theirs
        };
        if take_theirs {
            match t.front.get(&key) {
                Some(item) => {
                    out[key.as_str()] = item.clone();
                }
                None => {
                    out.remove(&key);
                }
            }
        }
    }
    out
}

fn number(i: Option<&Item>) -> i64 {
    i.and_then(|i| i.as_integer()).unwrap_or(0)
}

/// The event id of the claim that made a side's assignee the assignee (its latest
/// `claimed` Log line), if any. A merged Log holds other agents' claims after it.
fn last_claim(p: &Parts) -> Option<String> {
    let assignee = p.front.get("assignee").and_then(|v| v.as_str())?;
    super::task::parse_log(&p.body)
        .into_iter()
        .rev()
        .find(|l| l.text == "claimed" && l.agent == assignee)
        .map(|l| l.event.unwrap_or(l.at))
}

/// Whether their side's assignment came from the earlier claim; `None` when either side
/// has no claim to compare.
fn earlier_claim_is_theirs(o: &Parts, t: &Parts) -> Option<bool> {
    let (oc, tc) = (last_claim(o)?, last_claim(t)?);
    Some(tc < oc)
}

/// A body as its head (title and anything before the first section) and its level-2
/// sections, each with its heading line.
fn sections(body: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![(String::new(), String::new())];
    let mut fence = false;
    for line in body.lines() {
        if line.starts_with("```") || line.starts_with("~~~") {
            fence = !fence;
        }
        if !fence && let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim_end().to_string(), String::new()));
        }
        if let Some(last) = out.last_mut() {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    out
}

fn merge_body(b: &Parts, o: &Parts, t: &Parts, later_is_theirs: bool) -> String {
    let (bs, os, ts) = (sections(&b.body), sections(&o.body), sections(&t.body));
    let find = |s: &[(String, String)], name: &str| {
        s.iter()
            .find(|(n, _)| n == name)
            .map(|(_, text)| text.clone())
    };
    let generation = |p: &Parts| number(p.front.get("generation"));
    let mut names: Vec<String> = os.iter().map(|(n, _)| n.clone()).collect();
    for (n, _) in &ts {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let mut out = String::new();
    for name in names {
        let (bv, ov, tv) = (find(&bs, &name), find(&os, &name), find(&ts, &name));
        let text = if ov == tv || tv == bv {
            ov
        } else if ov == bv {
            tv
        } else if name == "Log" {
            Some(union_log(
                ov.as_deref().unwrap_or(""),
                tv.as_deref().unwrap_or(""),
            ))
        } else if name == "Acceptance" && generation(o) == generation(t) {
            Some(union_checks(
                ov.as_deref().unwrap_or(""),
                tv.as_deref().unwrap_or(""),
                later_is_theirs,
            ))
        } else if name == "Acceptance" {
            if generation(t) > generation(o) {
                tv
            } else {
                ov
            }
        } else if later_is_theirs {
            tv
        } else {
            ov
        };
        if let Some(text) = text {
            if !out.is_empty() && !out.ends_with("\n\n") && !text.is_empty() {
                out.push('\n');
            }
            out.push_str(text.trim_end_matches('\n'));
            out.push('\n');
        }
    }
    out
}

/// The union of two `## Log` sections: the heading, then every distinct line in time order
/// (a stable sort, so lines of one time keep their order).
fn union_log(ours: &str, theirs: &str) -> String {
    let mut lines = ours.lines();
    let heading = lines.next().unwrap_or("## Log").to_string();
    let mut entries: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    for l in theirs.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        if !entries.contains(&l) {
            entries.push(l);
        }
    }
    let at = |l: &str| {
        l.strip_prefix("- ")
            .and_then(|r| r.split(' ').next())
            .unwrap_or("")
            .to_string()
    };
    entries.sort_by_key(|l| at(l));
    let mut out = heading;
    out.push('\n');
    for l in entries {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Two `## Acceptance` sections of one generation: when their criteria have the same texts,
/// each is checked when either side checked it; otherwise the later write's section.
fn union_checks(ours: &str, theirs: &str, later_is_theirs: bool) -> String {
    let crit = |l: &str| -> Option<(bool, String)> {
        let rest = l.strip_prefix("- [")?;
        let (mark, text) = rest.split_at_checked(2)?;
        let checked = match mark {
            "x]" | "X]" => true,
            " ]" => false,
            _ => return None,
        };
        Some((checked, text.to_string()))
    };
    let oc: Vec<(bool, String)> = ours.lines().filter_map(crit).collect();
    let tc: Vec<(bool, String)> = theirs.lines().filter_map(crit).collect();
    let same = oc.len() == tc.len() && oc.iter().zip(&tc).all(|(a, b)| a.1 == b.1);
    if !same {
        return if later_is_theirs { theirs } else { ours }.to_string();
    }
    let mut i = 0;
    let mut out = String::new();
    for line in ours.lines() {
        if crit(line).is_some() {
            let checked = oc[i].0 || tc[i].0;
            out.push_str(&format!(
                "- [{}]{}\n",
                if checked { "x" } else { " " },
                oc[i].1
            ));
            i += 1;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::merge_record;

    const BASE: &str = "+++\nid = \"t-01\"\nkind = \"task\"\nowner = \"a-root\"\nrev = \"01A\"\nseq = 3\npriority = \"should\"\n+++\n\n# T\n\n## Acceptance\n- [ ] one\n- [ ] two\n\n## Log\n- 2026-03-02T09:00:00Z a-root created\n";

    #[test]
    fn two_owner_edits_merge_field_by_field_and_logs_union() {
        let ours = BASE
            .replace("rev = \"01A\"", "rev = \"01B\"")
            .replace("priority = \"should\"", "priority = \"must\"")
            .replace("- [ ] one", "- [x] one")
            .replace(
                "created\n",
                "created\n- 2026-03-02T09:00:05Z a-root checked 1\n",
            );
        let theirs = BASE
            .replace("rev = \"01A\"", "rev = \"01C\"")
            .replace("seq = 3", "seq = 3\ntags = [\"x\"]")
            .replace("- [ ] two", "- [x] two")
            .replace(
                "created\n",
                "created\n- 2026-03-02T09:00:03Z a-root comment: hi\n",
            );
        let merged = merge_record(BASE, &ours, &theirs).unwrap();
        assert!(merged.contains("rev = \"01C\""), "{merged}");
        assert!(merged.contains("priority = \"must\""), "{merged}");
        assert!(merged.contains("tags = [\"x\"]"), "{merged}");
        assert!(merged.contains("- [x] one\n- [x] two\n"), "{merged}");
        assert!(
            merged.contains("created\n- 2026-03-02T09:00:03Z a-root comment: hi\n- 2026-03-02T09:00:05Z a-root checked 1\n"),
            "{merged}"
        );
        // Either order of the sides gives the same bytes.
        assert_eq!(merge_record(BASE, &theirs, &ours).unwrap(), merged);
        assert!(!merged.contains("<<<<<<<"));
    }

    #[test]
    fn the_earlier_claim_keeps_the_assignee() {
        let claim = |who: &str, ev: &str, at: &str, rev: &str| {
            BASE.replace(
                "rev = \"01A\"",
                &format!("rev = \"{rev}\"\nassignee = \"{who}\""),
            )
            .replace(
                "created\n",
                &format!("created\n- {at} {who} claimed (event {ev})\n"),
            )
        };
        let ours = claim(
            "a-x",
            "01KJSJCSD0D9PPNTSVE6C6J8MT",
            "2026-03-02T09:00:02Z",
            "01Z",
        );
        let theirs = claim(
            "a-y",
            "01KJSJCSD0D9PPNTSVE6C6J8MS",
            "2026-03-02T09:00:04Z",
            "01B",
        );
        let merged = merge_record(BASE, &ours, &theirs).unwrap();
        assert!(merged.contains("assignee = \"a-y\""), "{merged}");
        assert!(merged.contains("rev = \"01Z\""), "{merged}");
    }

    /// A merged Log holds a later claim after the assignee's own: the side whose assignee's
    /// claim is earlier still keeps the assignee, whatever the last `claimed` line says.
    #[test]
    fn a_later_claim_in_a_merged_log_does_not_take_the_assignee() {
        let early = "- 2026-03-02T09:00:02Z a-x claimed (event 01KJSJCSD0D9PPNTSVE6C6J8MS)\n";
        let late = "- 2026-03-02T09:00:09Z a-y claimed (event 01KJSJCSD0D9PPNTSVE6C6J8MV)\n";
        let side = |who: &str, rev: &str, log: &str| {
            BASE.replace(
                "rev = \"01A\"",
                &format!("rev = \"{rev}\"\nassignee = \"{who}\""),
            )
            .replace("created\n", &format!("created\n{log}"))
        };
        // Ours merged both claims before (the earlier holds it); theirs applied only the later.
        let ours = side("a-x", "01B", &format!("{early}{late}"));
        let theirs = side("a-y", "01Z", late);
        let merged = merge_record(BASE, &ours, &theirs).unwrap();
        assert!(merged.contains("assignee = \"a-x\""), "{merged}");
        assert_eq!(merge_record(BASE, &theirs, &ours).unwrap(), merged);
    }

    #[test]
    fn conflicted_or_foreign_input_is_left_to_the_caller() {
        assert!(merge_record("", "not a record", "+++\n+++\n").is_none());
        assert!(merge_record(BASE, "<<<<<<< ours\n", BASE).is_none());
    }
}
