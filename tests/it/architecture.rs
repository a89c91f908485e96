//! The architecture test: `spec/ARCHITECTURE.md` §2–§3, enforced instead of hoped for.
//!
//! Every file under `src/` is scanned for the crate modules it names, and each named module is
//! judged against one table:
//!
//! | rule             | what it forbids                                                          |
//! |------------------|--------------------------------------------------------------------------|
//! | `upward`         | naming a module whose rank in [`LAYERS`] is not strictly lower           |
//! | `front_end`      | `cli`/`mcp` naming anything but [`FRONT_END_MAY_NAME`]                   |
//! | `pure_layer`     | `model`/`policy` naming anything beyond [`PURE_LAYERS`]                  |
//! | `slice`          | one slice of `commands/` naming another slice (the registry may)         |
//! | `impure`         | `model`/`policy` mentioning any of [`IMPURE_NAMES`]                      |
//! | `unknown_module` | a top-level module, or a named crate-root item, missing from [`LAYERS`]  |
//! | `commands_fs`    | a file of `commands/` writing or locking files: an [`FS_WRITE_METHODS`]  |
//! |                  | call on `fs`, a [`STD_FS_WRITES`] path, or a [`WRITE_ENTRY_POINTS`] call |
//! | `cycle`          | an import cycle between file modules (beyond [`KNOWN_CYCLES`])          |
//!
//! Why a table and a test rather than prose: layering erodes one convenient `use` at a time, and
//! each erosion compiles. Ranks make "lower" a number, so the test can say exactly which edge is
//! wrong. Equal ranks (`git`, `github`, `exec`; `cli`, `mcp`) are siblings that must not know
//! each other: each owns one hazard or one front end, and they are combined one level up. A
//! module missing from the table is itself a violation, because placing a new module in the
//! layering is a design decision that belongs in review, here.
//!
//! When one occurrence breaks several rules, only the most specific is reported: `front_end`
//! and `pure_layer` are stricter than `upward`, so `cli` naming `mcp` is a `front_end`
//! violation and `policy` naming `commands` a `pure_layer` one.
//!
//! What counts as naming a module: any path that starts with `crate::` (or `$crate::` in a
//! macro) or with a `super::` chain that leaves the current module, whether it sits in a `use`
//! (plain, grouped, nested, multi-line), a `pub(in ...)` visibility or an inline expression or
//! type. `super::` is resolved against the file's module path (a `mod.rs` is its directory) plus
//! any inline `mod name { ... }` it sits in, so `use super::*` in a test module stays home.
//! Comments, doc comments and string/char literals are blanked before scanning, so prose and
//! messages may mention any path. The flip side: a path written only inside a string (say a
//! `#[serde(with = "...")]` attribute) is not seen.
//!
//! `commands_fs` keeps every transaction in `ops`: a command parses, calls one operation and
//! renders, so no command file takes a lock or writes a workspace file, directly or through a
//! lower layer's write entry point. Files not yet migrated are listed in
//! [`PENDING_COMMANDS_FS`]; the list only shrinks, because a listed file that no longer
//! violates the rule fails the test until its line is deleted.
//!
//! `cycle` judges the graph of file modules (`objects/index.rs` is `objects::index`): every
//! path a file names, resolved as above, is an edge to the deepest file module it reaches. A
//! module naming its own sub-modules is containment, not an edge; a sub-module naming its
//! parent is. Every strongly connected component of more than one module is a cycle, reported
//! with its modules and one edge out of each. [`KNOWN_CYCLES`] holds the cycles being removed;
//! it must match exactly, so it only shrinks.
//!
//! `src/lib.rs` and `src/main.rs` are the composition root and may name everything. A
//! `crate::name!` macro call is not judged: `#[macro_export]` puts every exported macro at the
//! crate root, whichever module defines it. Any other crate-root item (`crate::Result`) is an
//! `unknown_module` violation, because a root re-export would hide the edge to its real owner.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::Path;

/// Every top-level module of `src/` with its rank. A module may name itself and modules of
/// strictly lower rank, nothing else.
const LAYERS: &[(&str, u32)] = &[
    ("store", 0),
    ("workspace", 10),
    ("model", 20),
    ("objects", 25),
    ("journal", 30),
    ("policy", 40),
    ("brief", 45),
    ("git", 50),
    ("github", 50),
    ("exec", 50),
    ("ops", 55),
    ("dispatch", 60),
    ("commands", 70),
    ("cli", 80),
    ("mcp", 80),
];

/// Files at the top of `src/` that wire everything together and are therefore exempt.
const COMPOSITION_ROOTS: &[&str] = &["lib.rs", "main.rs"];

/// The front ends. Both must reach every command through the one command table, so anything
/// they name beyond the table and the plain types is a command body in the wrong place.
const FRONT_ENDS: &[&str] = &["cli", "mcp"];
const FRONT_END_MAY_NAME: &[&str] = &["dispatch", "model"];

/// The pure layers (values in, values out) and the only crate modules each may name. Lower
/// modules are not allowed either: `store` and `workspace` do I/O, and a pure layer must not
/// reach it indirectly.
const PURE_LAYERS: &[(&str, &[&str])] = &[("model", &[]), ("policy", &["model"])];

/// Names a pure layer may not mention at all: I/O, the environment, processes, the clock and
/// randomness. Each is a path fragment matched against whole segments of every path in the
/// file (grouped imports expanded): `std::fs` matches `std::fs::read` and `use std::{fs}`,
/// `io::stdin` matches `std::io::stdin` and `io::stdin()` after `use std::io`, and a trailing
/// `::` means "followed by a further segment", so `File::` catches `File::open` and
/// `std::fs::File::create` but not a type called `FileName`; `Timestamp::now` catches
/// `jiff::Timestamp::now` and the same call after `use jiff::Timestamp`.
const IMPURE_NAMES: &[&str] = &[
    "std::fs",
    "std::env",
    "std::process",
    "std::net",
    "io::stdin",
    "io::stdout",
    "SystemTime",
    "Instant",
    "File::",
    "OpenOptions",
    "getrandom",
    "Timestamp::now",
    "Zoned::now",
];

/// The module whose sub-modules are the slices. Its own file (`commands/mod.rs`) is the
/// registry, which names every slice and is therefore not itself a slice.
const SLICE_PARENT: &str = "commands";

/// The methods of `store::Fs` (and its lock API) that write, remove or lock. Reads
/// (`read`, `list_dir`, `names`, `entry_kind`, `is_locked`, `temp_name`, `display`) are not
/// here: commands may read.
const FS_WRITE_METHODS: &[&str] = &[
    "create_dir_all",
    "replace",
    "replace_private",
    "replace_derived",
    "create_new",
    "stage",
    "publish_new",
    "append",
    "move_file",
    "remove",
    "remove_empty_dir",
    "publish_dir",
    "discard_dir",
    "lock",
    "lock_shared_if_exists",
    "try_lock",
];

/// Writes through the standard library, as path fragments matched like [`IMPURE_NAMES`].
const STD_FS_WRITES: &[&str] = &[
    "fs::write",
    "fs::create_dir",
    "fs::create_dir_all",
    "fs::remove_file",
    "fs::remove_dir",
    "fs::remove_dir_all",
    "fs::rename",
    "fs::copy",
    "fs::hard_link",
    "fs::set_permissions",
    "fs::soft_link",
    "unix::fs::symlink",
    "File::create",
    "File::create_new",
    "File::options",
    "OpenOptions",
];

/// The write entry points of the layers below `ops`, as crate paths: a path that names one
/// (or something inside it) from a command file writes a workspace file behind the command's
/// back. Reads of the same modules stay allowed.
const WRITE_ENTRY_POINTS: &[&str] = &[
    "objects::tasks::create",
    "objects::tasks::write",
    "objects::tasks::stage",
    // Deletes the stale copies an interrupted move left: the reload under a task's lock.
    "objects::tasks::reload",
    "objects::notes::create",
    "objects::risks::create",
    "objects::agents::create",
    "objects::agents::retire",
    "objects::queues::create",
    "objects::queues::write",
    "objects::queues::remove",
    "objects::roles::create",
    "objects::roles::write",
    "objects::roles::remove",
    "objects::runtimes::create",
    "objects::runtimes::remove",
    "objects::runtimes::write_cache",
    "objects::shortcuts::create",
    "objects::shortcuts::remove",
    "objects::client_files::replace",
    "objects::gitignore::add_missing",
    "journal::append",
    "journal::runs::append_run",
    "journal::evidence::write",
    "journal::archive::create_manifest",
    "journal::archive::seal",
    "journal::archive::mark_restored",
    "journal::sync::sync_task",
    "journal::sync::sync_other",
    "journal::sync::sync_all",
    "journal::txn::Txn::begin",
];

/// Files of `commands/` (relative to `src/`) not yet migrated to `ops`: they may still break
/// `commands_fs`. Delete a line when its file is migrated; a listed file that no longer breaks
/// the rule fails the test, so the list only shrinks.
const PENDING_COMMANDS_FS: &[&str] = &[];

/// The import cycles being removed, each as its set of modules. Each must match a cycle of
/// today's tree exactly: a listed cycle that is gone or changed fails the test, so the list
/// only shrinks.
const KNOWN_CYCLES: &[&[&str]] = &[];

/// What the real tree is allowed while it is being migrated; fixtures allow nothing.
struct Allowances<'a> {
    pending_commands_fs: &'a [&'a str],
    known_cycles: &'a [&'a [&'a str]],
}

const STRICT: Allowances<'static> = Allowances {
    pending_commands_fs: &[],
    known_cycles: &[],
};

/// The rules. Their names are stable: CI output, fixtures and reviewers refer to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rule {
    UnknownModule,
    Upward,
    FrontEnd,
    PureLayer,
    Slice,
    Impure,
    CommandsFs,
    Cycle,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::UnknownModule => "unknown_module",
            Rule::Upward => "upward",
            Rule::FrontEnd => "front_end",
            Rule::PureLayer => "pure_layer",
            Rule::Slice => "slice",
            Rule::Impure => "impure",
            Rule::CommandsFs => "commands_fs",
            Rule::Cycle => "cycle",
        }
    }
}

/// One broken rule at one place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    /// Relative to the scanned `src` directory, `/`-separated.
    file: String,
    /// 1-based.
    line: usize,
    rule: Rule,
    message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: [{}] {}",
            self.file,
            self.line,
            self.rule.name(),
            self.message
        )
    }
}

fn rank_of(module: &str) -> Option<u32> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, rank)| *rank)
}

/// Checks every `.rs` file under `src_root` and returns the violations sorted by file and line.
fn check_tree(src_root: &Path) -> Vec<Violation> {
    check_tree_allowing(src_root, &STRICT)
}

/// [`check_tree`] with what `allow` tolerates (and what it lists in vain) taken into account.
fn check_tree_allowing(src_root: &Path, allow: &Allowances<'_>) -> Vec<Violation> {
    let sources: Vec<(String, String)> = rust_files(src_root)
        .into_iter()
        .map(|file| {
            let path = src_root.join(&file);
            let source = fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
            (file, source)
        })
        .collect();
    check_sources(&sources, allow)
}

/// Checks `sources` (path relative to `src`, text) as one tree.
fn check_sources(sources: &[(String, String)], allow: &Allowances<'_>) -> Vec<Violation> {
    let slices = slice_names(sources);
    let modules: BTreeSet<String> = sources
        .iter()
        .filter_map(|(file, _)| module_path_of(file))
        .map(|path| path.join("::"))
        .collect();
    let mut unknown_reported = BTreeSet::new();
    let mut violations = Vec::new();
    let mut edges = Vec::new();
    let mut still_pending = BTreeSet::new();
    for (file, source) in sources {
        let Some(module_path) = module_path_of(file) else {
            continue;
        };
        let top = module_path[0].as_str();
        if rank_of(top).is_none() {
            // Once per module is enough to make the point; its first file in path order.
            if unknown_reported.insert(top.to_owned()) {
                violations.push(Violation {
                    file: file.clone(),
                    line: 1,
                    rule: Rule::UnknownModule,
                    message: format!(
                        "top-level module `{top}` is not in the layer table: give it a rank in \
                         LAYERS (tests/it/architecture.rs)"
                    ),
                });
            }
            continue;
        }
        let mut references = Vec::new();
        violations.extend(check_source(
            file,
            &module_path,
            source,
            &slices,
            &mut references,
        ));
        edges.extend(module_edges(file, &module_path, &references, &modules));
        if top == SLICE_PARENT {
            let found = check_commands_fs(file, &module_path, source);
            if allow.pending_commands_fs.contains(&file.as_str()) {
                if !found.is_empty() {
                    still_pending.insert(file.clone());
                }
            } else {
                violations.extend(found);
            }
        }
    }
    for listed in allow.pending_commands_fs {
        if !still_pending.contains(*listed) {
            violations.push(Violation {
                file: (*listed).to_owned(),
                line: 1,
                rule: Rule::CommandsFs,
                message: "listed in PENDING_COMMANDS_FS but makes no file-system write or lock \
                          call (or does not exist): delete its line (tests/it/architecture.rs)"
                    .to_owned(),
            });
        }
    }
    violations.extend(check_cycles(&edges, allow.known_cycles));
    violations.sort();
    violations
}

/// Every `.rs` file below `root`, as sorted `/`-separated relative paths.
fn rust_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, relative: &str, out: &mut Vec<String>) {
        let entries =
            fs::read_dir(dir).unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            let path = entry.path();
            if path.is_dir() {
                walk(&path, &child, out);
            } else if name.ends_with(".rs") {
                out.push(child);
            }
        }
    }
    let mut files = Vec::new();
    walk(root, "", &mut files);
    files.sort();
    files
}

/// The slices: every sub-module of `commands/`, found among the files so a new slice is
/// covered the moment it exists.
fn slice_names(sources: &[(String, String)]) -> BTreeSet<String> {
    sources
        .iter()
        .filter_map(|(file, _)| {
            let rest = file.strip_prefix(SLICE_PARENT)?.strip_prefix('/')?;
            match rest.split_once('/') {
                Some((dir, _)) => Some(dir.to_owned()),
                None => rest
                    .strip_suffix(".rs")
                    .filter(|stem| *stem != "mod")
                    .map(str::to_owned),
            }
        })
        .collect()
}

/// The module path a file defines (`commands/planning/mod.rs` -> `commands::planning`), or
/// `None` for the composition root.
fn module_path_of(file: &str) -> Option<Vec<String>> {
    if COMPOSITION_ROOTS.contains(&file) {
        return None;
    }
    let without_extension = file.strip_suffix(".rs").unwrap_or(file);
    let mut path: Vec<String> = without_extension.split('/').map(str::to_owned).collect();
    if path.len() > 1 && path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    Some(path)
}

/// Checks one file whose module path is `module_path` (never empty).
fn check_source(
    file: &str,
    module_path: &[String],
    source: &str,
    slices: &BTreeSet<String>,
    references: &mut Vec<(Vec<Segment>, usize)>,
) -> Vec<Violation> {
    let tokens = tokenize(&strip_comments_and_literals(source));
    let own_top = module_path[0].as_str();
    let is_pure = PURE_LAYERS.iter().any(|(name, _)| *name == own_top);

    // (line, rule, what was named): several leaves of one grouped import can break the same
    // rule for the same target on the same line, e.g. `commands::{a, b}`; say it once.
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    let mut report = |verdict: Verdict| {
        if seen.insert((verdict.line, verdict.rule, verdict.subject)) {
            violations.push(Violation {
                file: file.to_owned(),
                line: verdict.line,
                rule: verdict.rule,
                message: verdict.message,
            });
        }
    };

    // Inline `mod name { ... }` blocks change what `super::` means, so the module path grows
    // and shrinks with them; `inline_module_depths` holds the brace depth each one opened at.
    let mut current_module = module_path.to_vec();
    let mut inline_module_depths: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i].kind {
            TokenKind::Punct('{') => {
                depth += 1;
                i += 1;
            }
            TokenKind::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline_module_depths.last() == Some(&depth) {
                    inline_module_depths.pop();
                    current_module.pop();
                }
                i += 1;
            }
            TokenKind::Ident(keyword) if keyword == "mod" => {
                if let (Some(TokenKind::Ident(name)), Some(TokenKind::Punct('{'))) =
                    (kind_at(&tokens, i + 1), kind_at(&tokens, i + 2))
                {
                    current_module.push(name.clone());
                    inline_module_depths.push(depth);
                    depth += 1;
                    i += 3;
                } else {
                    i += 1;
                }
            }
            TokenKind::Ident(_) => {
                let mut leaves = Vec::new();
                let end = parse_tree(&tokens, i, &[], &mut leaves);
                let is_macro_call = matches!(kind_at(&tokens, end), Some(TokenKind::Punct('!')));
                for leaf in &leaves {
                    let target = resolve(leaf, &current_module);
                    if let Some(target) = &target
                        && let Some(verdict) =
                            judge_reference(&current_module, leaf, target, is_macro_call, slices)
                    {
                        report(verdict);
                    }
                    if let Some(target) = target
                        && !is_macro_call
                        && let Some(first) = target.first()
                    {
                        let line = first.line;
                        references.push((target, line));
                    }
                    if is_pure && let Some(verdict) = judge_purity(own_top, leaf) {
                        report(verdict);
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    violations
}

/// A broken rule before it is placed in a file.
struct Verdict {
    line: usize,
    rule: Rule,
    /// What was named, to tell repeated reports of one edge apart from distinct ones.
    subject: String,
    message: String,
}

/// Judges one reference from `current_module` to the crate path `target` (already resolved
/// from `written`), picking the most specific rule it breaks.
fn judge_reference(
    current_module: &[String],
    written: &[Segment],
    target: &[Segment],
    is_macro_call: bool,
    slices: &BTreeSet<String>,
) -> Option<Verdict> {
    let own = current_module[0].as_str();
    let named = target.first()?;
    let named_top = named.name.as_str();
    let written = render_path(written);

    // `crate::{self, ...}` names the root itself, which carries no layer edge.
    if named_top == "self" {
        return None;
    }

    if named_top == own {
        let own_slice = slice_of(current_module, slices)?;
        let named_slice = target
            .get(1)
            .filter(|segment| slices.contains(&segment.name))?;
        if named_slice.name == own_slice {
            return None;
        }
        return Some(Verdict {
            line: named_slice.line,
            rule: Rule::Slice,
            subject: named_slice.name.clone(),
            message: format!(
                "slice `{SLICE_PARENT}::{own_slice}` names slice `{SLICE_PARENT}::{}` via \
                 `{written}`: slices never import each other; move what both need into a lower \
                 layer",
                named_slice.name
            ),
        });
    }

    let Some(named_rank) = rank_of(named_top) else {
        // A `#[macro_export]` macro lives at the crate root wherever it is defined.
        if is_macro_call && target.len() == 1 {
            return None;
        }
        return Some(Verdict {
            line: named.line,
            rule: Rule::UnknownModule,
            subject: named_top.to_owned(),
            message: format!(
                "`{written}` names `{named_top}`, which is not in the layer table: add the \
                 module to LAYERS, or, for an item at the crate root (a re-export), name it \
                 through its owning module so the layer edge stays visible"
            ),
        });
    };

    let verdict = |rule: Rule, message: String| Verdict {
        line: named.line,
        rule,
        subject: named_top.to_owned(),
        message,
    };

    if FRONT_ENDS.contains(&own) && !FRONT_END_MAY_NAME.contains(&named_top) {
        return Some(verdict(
            Rule::FrontEnd,
            format!(
                "front end `{own}` names `{named_top}` via `{written}`: front ends may name only \
                 {}; a command body belongs in a slice behind the command table",
                render_list(FRONT_END_MAY_NAME)
            ),
        ));
    }

    if let Some((_, may_name)) = PURE_LAYERS.iter().find(|(name, _)| *name == own)
        && !may_name.contains(&named_top)
    {
        let allowed = if may_name.is_empty() {
            "no other crate module".to_owned()
        } else {
            format!("only {}", render_list(may_name))
        };
        return Some(verdict(
            Rule::PureLayer,
            format!(
                "pure layer `{own}` names `{named_top}` via `{written}`: it may name {allowed}"
            ),
        ));
    }

    let own_rank = rank_of(own)?;
    if named_rank >= own_rank {
        return Some(verdict(
            Rule::Upward,
            format!(
                "`{own}` (rank {own_rank}) names `{named_top}` (rank {named_rank}) via \
                 `{written}`: a module may name only modules of strictly lower rank"
            ),
        ));
    }
    None
}

/// The first name of [`IMPURE_NAMES`] that `written` mentions, if any.
fn judge_purity(own: &str, written: &[Segment]) -> Option<Verdict> {
    IMPURE_NAMES.iter().find_map(|pattern| {
        let last = find_fragment(written, pattern)?;
        Some(Verdict {
            line: written[last].line,
            rule: Rule::Impure,
            subject: (*pattern).to_owned(),
            message: format!(
                "pure layer `{own}` mentions `{pattern}` (in `{}`): it takes values in and gives \
                 values out; the caller does the I/O, reads the clock or the environment",
                render_path(written)
            ),
        })
    })
}

/// Where `pattern` (a `::`-separated fragment, optionally ending in `::`) occurs as whole
/// segments of `path`: the index of its last named segment.
fn find_fragment(path: &[Segment], pattern: &str) -> Option<usize> {
    let needs_more = pattern.ends_with("::");
    let wanted: Vec<&str> = pattern.trim_end_matches("::").split("::").collect();
    (0..path.len()).find_map(|start| {
        let end = start + wanted.len();
        let window = path.get(start..end)?;
        let matches = window
            .iter()
            .zip(&wanted)
            .all(|(seg, want)| seg.name == *want);
        (matches && (!needs_more || end < path.len())).then_some(end - 1)
    })
}

/// The slice `module` belongs to, if it is inside one (the registry `commands` is not).
fn slice_of<'a>(module: &'a [String], slices: &BTreeSet<String>) -> Option<&'a str> {
    match module {
        [parent, slice, ..] if parent == SLICE_PARENT && slices.contains(slice) => Some(slice),
        _ => None,
    }
}

/// Turns a written path into a path from the crate root. `None` for paths that cannot leave
/// the current module (plain names, `self::`) and for extern crates, which are not layers.
fn resolve(written: &[Segment], current_module: &[String]) -> Option<Vec<Segment>> {
    let first = written.first()?;
    match first.name.as_str() {
        "crate" | "$crate" => Some(written[1..].to_vec()),
        "super" => {
            let ups = written.iter().take_while(|s| s.name == "super").count();
            // More `super`s than ancestors does not compile; nothing to judge.
            let kept = current_module.len().checked_sub(ups)?;
            let mut resolved: Vec<Segment> = current_module[..kept]
                .iter()
                .map(|name| Segment {
                    name: name.clone(),
                    line: first.line,
                })
                .collect();
            resolved.extend_from_slice(&written[ups..]);
            Some(resolved)
        }
        _ => None,
    }
}

/// A path as written, with a trailing `self` (`use a::{self}`) read as the path it imports.
fn render_path(path: &[Segment]) -> String {
    let shown = match path {
        [rest @ .., last] if !rest.is_empty() && last.name == "self" => rest,
        _ => path,
    };
    shown
        .iter()
        .map(|segment| segment.name.as_str())
        .collect::<Vec<_>>()
        .join("::")
}

fn render_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(" and ")
}

// ---------------------------------------------------------------------------------------------
// File-system writes from commands

/// The `commands_fs` violations of one command file.
fn check_commands_fs(file: &str, module_path: &[String], source: &str) -> Vec<Violation> {
    let tokens = tokenize(&strip_comments_and_literals(source));
    let imports = imported_names(&tokens, module_path);
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    let mut report = |line: usize, subject: String, message: String| {
        if seen.insert((line, subject)) {
            violations.push(Violation {
                file: file.to_owned(),
                line,
                rule: Rule::CommandsFs,
                message,
            });
        }
    };
    let advice = "a command makes no file-system write or lock call: move the transaction \
                  (lock, reload, decide, write) into an operation in `ops` and render its result";
    let mut i = 0;
    while i < tokens.len() {
        let after_dot = i > 0 && matches!(kind_at(&tokens, i - 1), Some(TokenKind::Punct('.')));
        match &tokens[i].kind {
            TokenKind::Ident(name) if name == "fs" => {
                if let (
                    Some(TokenKind::Punct('.')),
                    Some(TokenKind::Ident(method)),
                    Some(TokenKind::Punct('(')),
                ) = (
                    kind_at(&tokens, i + 1),
                    kind_at(&tokens, i + 2),
                    kind_at(&tokens, i + 3),
                ) && FS_WRITE_METHODS.contains(&method.as_str())
                {
                    report(
                        tokens[i + 2].line,
                        format!("fs.{method}"),
                        format!("`fs.{method}(..)`: {advice}"),
                    );
                    i += 4;
                    continue;
                }
                i = if after_dot {
                    i + 1
                } else {
                    judge_command_path(&tokens, i, module_path, &imports, &mut report, advice)
                };
            }
            TokenKind::Ident(_) if !after_dot => {
                i = judge_command_path(&tokens, i, module_path, &imports, &mut report, advice);
            }
            _ => i += 1,
        }
    }
    violations
}

/// Judges the path at `tokens[start]` against [`STD_FS_WRITES`] and [`WRITE_ENTRY_POINTS`];
/// returns the index after it.
fn judge_command_path(
    tokens: &[Token],
    start: usize,
    module_path: &[String],
    imports: &std::collections::BTreeMap<String, Vec<String>>,
    report: &mut impl FnMut(usize, String, String),
    advice: &str,
) -> usize {
    let mut leaves = Vec::new();
    let end = parse_tree(tokens, start, &[], &mut leaves);
    for leaf in &leaves {
        let line = leaf.first().map_or(0, |segment| segment.line);
        if let Some(pattern) = STD_FS_WRITES
            .iter()
            .find(|pattern| find_fragment(leaf, pattern).is_some())
        {
            report(
                line,
                (*pattern).to_owned(),
                format!("`{}` writes through `std`: {advice}", render_path(leaf)),
            );
        }
        let target: Option<Vec<String>> = match resolve(leaf, module_path) {
            Some(target) => Some(target.into_iter().map(|s| s.name).collect()),
            None => leaf.first().and_then(|first| {
                imports.get(&first.name).map(|base| {
                    base.iter()
                        .cloned()
                        .chain(leaf[1..].iter().map(|s| s.name.clone()))
                        .collect()
                })
            }),
        };
        let Some(target) = target else { continue };
        if let Some(entry) = WRITE_ENTRY_POINTS.iter().find(|entry| {
            let wanted: Vec<&str> = entry.split("::").collect();
            target.len() >= wanted.len() && target.iter().zip(&wanted).all(|(a, b)| a == b)
        }) {
            report(
                line,
                (*entry).to_owned(),
                format!(
                    "`{}` calls the write entry point `{entry}`: {advice}",
                    render_path(leaf)
                ),
            );
        }
    }
    end.max(start + 1)
}

/// The names a file's `use` items bring into scope (the alias, or the last segment; `self`
/// stands for its parent), each with the crate path it stands for. Extern crates are left out.
fn imported_names(
    tokens: &[Token],
    module_path: &[String],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut imports = std::collections::BTreeMap::new();
    for (i, token) in tokens.iter().enumerate() {
        if token.kind != TokenKind::Ident("use".to_owned()) {
            continue;
        }
        let mut leaves = Vec::new();
        let end = parse_tree(tokens, i + 1, &[], &mut leaves);
        let alias = match (kind_at(tokens, end), kind_at(tokens, end + 1)) {
            (Some(TokenKind::Ident(r#as)), Some(TokenKind::Ident(alias)))
                if r#as == "as" && leaves.len() == 1 =>
            {
                Some(alias.clone())
            }
            _ => None,
        };
        for leaf in &leaves {
            let Some(target) = resolve(leaf, module_path) else {
                continue;
            };
            let mut names: Vec<String> = target.into_iter().map(|s| s.name).collect();
            if names.last().is_some_and(|last| last == "self") {
                names.pop();
            }
            let Some(key) = alias.clone().or_else(|| names.last().cloned()) else {
                continue;
            };
            if key != "*" {
                imports.insert(key, names);
            }
        }
    }
    imports
}

// ---------------------------------------------------------------------------------------------
// Cycles between file modules

/// One edge of the module graph, with where it is written.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The edges out of one file: each resolved reference to the deepest file module it reaches,
/// minus references to the file's own module or its sub-modules.
fn module_edges(
    file: &str,
    module_path: &[String],
    references: &[(Vec<Segment>, usize)],
    modules: &BTreeSet<String>,
) -> Vec<Edge> {
    let from = module_path.join("::");
    let mut edges = Vec::new();
    for (target, line) in references {
        let names: Vec<&str> = target.iter().map(|s| s.name.as_str()).collect();
        let Some(to) = (1..=names.len())
            .rev()
            .map(|k| names[..k].join("::"))
            .find(|candidate| modules.contains(candidate))
        else {
            continue;
        };
        if to == from || to.starts_with(&format!("{from}::")) {
            continue;
        }
        edges.push(Edge {
            from: from.clone(),
            to,
            file: file.to_owned(),
            line: *line,
        });
    }
    edges
}

/// The `cycle` violations of the graph `edges`: every strongly connected component of more
/// than one module that `known` does not list exactly, and every listed cycle that is gone.
fn check_cycles(edges: &[Edge], known: &[&[&str]]) -> Vec<Violation> {
    use std::collections::BTreeMap;
    // The first edge (in file and line order) for each pair of modules.
    let mut sorted: Vec<&Edge> = edges.iter().collect();
    sorted.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    let mut first_edge: BTreeMap<(&str, &str), &Edge> = BTreeMap::new();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for edge in sorted {
        first_edge
            .entry((edge.from.as_str(), edge.to.as_str()))
            .or_insert(edge);
        graph
            .entry(edge.from.as_str())
            .or_default()
            .insert(edge.to.as_str());
        graph.entry(edge.to.as_str()).or_default();
    }
    let components = strongly_connected(&graph);
    let mut matched = BTreeSet::new();
    let mut violations = Vec::new();
    for component in components.into_iter().filter(|c| c.len() > 1) {
        let set: BTreeSet<String> = component.iter().map(|m| (*m).to_owned()).collect();
        if let Some(index) = known.iter().position(|cycle| {
            cycle
                .iter()
                .map(|m| (*m).to_owned())
                .collect::<BTreeSet<_>>()
                == set
        }) {
            matched.insert(index);
            continue;
        }
        // One edge out of each member to another member.
        let members: Vec<&Edge> = set
            .iter()
            .filter_map(|from| {
                graph[from.as_str()]
                    .iter()
                    .find(|to| set.contains(**to))
                    .and_then(|to| first_edge.get(&(from.as_str(), *to)).copied())
            })
            .collect();
        let Some(anchor) = members.first() else {
            continue;
        };
        let shown: Vec<String> = members
            .iter()
            .map(|e| format!("`{}` → `{}` (src/{}:{})", e.from, e.to, e.file, e.line))
            .collect();
        violations.push(Violation {
            file: anchor.file.clone(),
            line: anchor.line,
            rule: Rule::Cycle,
            message: format!(
                "import cycle between {}: {}; break it by moving what both sides need into one \
                 of them or a lower module",
                set.iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                shown.join(", ")
            ),
        });
    }
    for (index, cycle) in known.iter().enumerate() {
        if !matched.contains(&index) {
            violations.push(Violation {
                file: "(KNOWN_CYCLES)".to_owned(),
                line: index + 1,
                rule: Rule::Cycle,
                message: format!(
                    "KNOWN_CYCLES lists the cycle {{{}}}, which no longer exists as listed: \
                     delete it, or list what remains of it (tests/it/architecture.rs)",
                    cycle.join(", ")
                ),
            });
        }
    }
    violations
}

/// Tarjan's strongly connected components of `graph`, each sorted, in a stable order.
fn strongly_connected<'a>(
    graph: &std::collections::BTreeMap<&'a str, BTreeSet<&'a str>>,
) -> Vec<Vec<&'a str>> {
    use std::collections::BTreeMap;
    struct State<'a> {
        next: usize,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(node: &'a str, graph: &BTreeMap<&'a str, BTreeSet<&'a str>>, st: &mut State<'a>) {
        st.index.insert(node, st.next);
        st.low.insert(node, st.next);
        st.next += 1;
        st.stack.push(node);
        st.on_stack.insert(node);
        for &next in graph.get(node).into_iter().flatten() {
            if !st.index.contains_key(next) {
                visit(next, graph, st);
                let low = st.low[node].min(st.low[next]);
                st.low.insert(node, low);
            } else if st.on_stack.contains(next) {
                let low = st.low[node].min(st.index[next]);
                st.low.insert(node, low);
            }
        }
        if st.low[node] == st.index[node] {
            let mut component = Vec::new();
            while let Some(member) = st.stack.pop() {
                st.on_stack.remove(member);
                component.push(member);
                if member == node {
                    break;
                }
            }
            component.sort_unstable();
            st.out.push(component);
        }
    }
    let mut st = State {
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &node in graph.keys() {
        if !st.index.contains_key(node) {
            visit(node, graph, &mut st);
        }
    }
    st.out.sort();
    st.out
}

// ---------------------------------------------------------------------------------------------
// Paths and `use` trees

/// One segment of a path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    name: String,
    /// The line a violation naming this segment is reported on: where the path starts or, inside
    /// braces, where the group member holding this segment starts.
    line: usize,
}

/// Parses the path or `use` tree at `tokens[start]` (an identifier, `{` or `*`), appending
/// every leaf path it spells out, with `prefix` in front, to `leaves`. Returns the index of the
/// first token after it. Inline paths stop at anything that is not `::` followed by a name, so
/// generic arguments (`Vec<crate::a::T>`, `f::<crate::b::U>()`) are scanned as paths of their
/// own by the caller.
fn parse_tree(
    tokens: &[Token],
    start: usize,
    prefix: &[Segment],
    leaves: &mut Vec<Vec<Segment>>,
) -> usize {
    let Some(first) = tokens.get(start) else {
        return start;
    };
    let anchor = first.line;
    let mut path = prefix.to_vec();
    let mut i = start;
    loop {
        match kind_at(tokens, i) {
            Some(TokenKind::Ident(name)) => {
                path.push(Segment {
                    name: name.clone(),
                    line: anchor,
                });
                i += 1;
            }
            Some(TokenKind::Punct('*')) => {
                path.push(Segment {
                    name: "*".to_owned(),
                    line: anchor,
                });
                leaves.push(path);
                return i + 1;
            }
            Some(TokenKind::Punct('{')) => return parse_group(tokens, i + 1, &path, leaves),
            _ => {
                if path.len() > prefix.len() {
                    leaves.push(path);
                }
                return i;
            }
        }
        let continues = matches!(kind_at(tokens, i), Some(TokenKind::PathSep))
            && matches!(
                kind_at(tokens, i + 1),
                Some(TokenKind::Ident(_) | TokenKind::Punct('{' | '*'))
            );
        if !continues {
            leaves.push(path);
            return i;
        }
        i += 1;
    }
}

/// Parses the members of a `{ ... }` group whose `{` is just before `start`; returns the index
/// after the matching `}`.
fn parse_group(
    tokens: &[Token],
    start: usize,
    prefix: &[Segment],
    leaves: &mut Vec<Vec<Segment>>,
) -> usize {
    let mut i = start;
    loop {
        match kind_at(tokens, i) {
            None => return i,
            Some(TokenKind::Punct('}')) => return i + 1,
            Some(TokenKind::Ident(_) | TokenKind::Punct('{' | '*')) => {
                i = parse_tree(tokens, i, prefix, leaves);
                // Skip what may follow a member (`as alias`) up to the next member.
                while let Some(kind) = kind_at(tokens, i) {
                    match kind {
                        TokenKind::Punct(',' | '}') => break,
                        TokenKind::Punct('{') => i = skip_braces(tokens, i),
                        _ => i += 1,
                    }
                }
            }
            Some(_) => i += 1,
        }
    }
}

/// The index after the `}` matching the `{` at `open`.
fn skip_braces(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token.kind {
            TokenKind::Punct('{') => depth += 1,
            TokenKind::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenKind {
    /// Keywords included; raw identifiers without their `r#`; `$crate` with its `$`.
    Ident(String),
    /// `::`
    PathSep,
    /// Number literals: only kept so that `1u8` is not read as the identifier `u8`.
    Number,
    Punct(char),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    kind: TokenKind,
    line: usize,
}

fn kind_at(tokens: &[Token], index: usize) -> Option<&TokenKind> {
    tokens.get(index).map(|token| &token.kind)
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Splits source that has been through [`strip_comments_and_literals`] into tokens.
fn tokenize(stripped: &str) -> Vec<Token> {
    let chars: Vec<char> = stripped.chars().collect();
    let word_end = |from: usize| {
        (from..chars.len())
            .find(|&i| !is_ident_char(chars[i]))
            .unwrap_or(chars.len())
    };
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let after_next = chars.get(i + 2).copied();
        let (kind, end) = if c == '\n' {
            line += 1;
            i += 1;
            continue;
        } else if c.is_whitespace() {
            i += 1;
            continue;
        } else if c == ':' && next == Some(':') {
            (TokenKind::PathSep, i + 2)
        } else if c == 'r' && next == Some('#') && after_next.is_some_and(is_ident_start) {
            let end = word_end(i + 2);
            (TokenKind::Ident(chars[i + 2..end].iter().collect()), end)
        } else if c == '$' && next.is_some_and(is_ident_start) {
            let end = word_end(i + 1);
            (TokenKind::Ident(chars[i..end].iter().collect()), end)
        } else if c.is_ascii_digit() {
            (TokenKind::Number, word_end(i))
        } else if is_ident_start(c) {
            let end = word_end(i);
            (TokenKind::Ident(chars[i..end].iter().collect()), end)
        } else {
            (TokenKind::Punct(c), i + 1)
        };
        tokens.push(Token { kind, line });
        i = end;
    }
    tokens
}

// ---------------------------------------------------------------------------------------------
// Comments and literals

/// Replaces comments (line, nested block, doc) and string, byte-string, raw-string and char
/// literals by spaces, keeping every newline so line numbers stay true. Lifetimes and labels
/// (`'a`, `'outer:`) are code and are kept.
fn strip_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let at_word_start = i == 0 || !is_ident_char(chars[i - 1]);
        let skipped_to = if chars[i] == '/' && chars.get(i + 1) == Some(&'/') {
            Some(line_comment_end(&chars, i))
        } else if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            Some(block_comment_end(&chars, i))
        } else if at_word_start {
            literal_end(&chars, i)
        } else {
            None
        };
        match skipped_to {
            Some(end) => {
                for &c in &chars[i..end] {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                }
                i = end;
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

fn line_comment_end(chars: &[char], start: usize) -> usize {
    (start..chars.len())
        .find(|&i| chars[i] == '\n')
        .unwrap_or(chars.len())
}

/// Block comments nest in Rust: `/* a /* b */ still a comment */`.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// If a literal starts at `start` (which begins a word, so the `r` of `bar"` is not a prefix),
/// the index just after it.
fn literal_end(chars: &[char], start: usize) -> Option<usize> {
    let at = |offset: usize| chars.get(start + offset).copied();
    match (at(0)?, at(1)) {
        ('"', _) => Some(quoted_end(chars, start + 1, '"')),
        ('\'', _) => char_literal_end(chars, start),
        ('b', Some('\'')) => char_literal_end(chars, start + 1),
        ('b' | 'c', Some('"')) => Some(quoted_end(chars, start + 2, '"')),
        ('r', _) => raw_string_end(chars, start + 1),
        ('b' | 'c', Some('r')) => raw_string_end(chars, start + 2),
        _ => None,
    }
}

/// The index after the unescaped `close` at or after `from`.
fn quoted_end(chars: &[char], from: usize, close: char) -> usize {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == close => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// `quote` is at a `'`. A char literal is `'\...'` or `'x'`; anything else (`'a`, `'static`,
/// `'outer:`) is a lifetime or label and not a literal.
fn char_literal_end(chars: &[char], quote: usize) -> Option<usize> {
    match (chars.get(quote + 1), chars.get(quote + 2)) {
        // Past the escaped character, so `'\''` ends at its last quote.
        (Some('\\'), Some(_)) => Some(quoted_end(chars, quote + 3, '\'')),
        (Some(_), Some('\'')) => Some(quote + 3),
        _ => None,
    }
}

/// `hashes` is just after the `r` of a possible raw string (`r"..."`, `r#"..."#`, ...); `r#name`
/// is a raw identifier, not a string.
fn raw_string_end(chars: &[char], hashes: usize) -> Option<usize> {
    let count = chars[hashes..].iter().take_while(|&&c| c == '#').count();
    if chars.get(hashes + count) != Some(&'"') {
        return None;
    }
    let mut i = hashes + count + 1;
    while i < chars.len() {
        let closes = chars
            .get(i + 1..i + 1 + count)
            .is_some_and(|tail| tail.iter().all(|&c| c == '#'));
        if chars[i] == '"' && closes {
            return Some(i + 1 + count);
        }
        i += 1;
    }
    Some(chars.len())
}

// ---------------------------------------------------------------------------------------------
// Tests

fn render(violations: &[Violation], prefix: &str) -> String {
    violations
        .iter()
        .map(|violation| format!("{prefix}{violation}\n"))
        .collect()
}

#[test]
fn src_tree_obeys_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(
        src.join("lib.rs").is_file(),
        "no crate at {}",
        src.display()
    );
    let violations = check_tree_allowing(
        &src,
        &Allowances {
            pending_commands_fs: PENDING_COMMANDS_FS,
            known_cycles: KNOWN_CYCLES,
        },
    );
    assert!(
        violations.is_empty(),
        "{} architecture violation(s) (spec/ARCHITECTURE.md §2–§3; rules in \
         tests/it/architecture.rs):\n{}",
        violations.len(),
        render(&violations, "src/")
    );
}

/// Runs the checker on `fixtures/architecture/<case>/src` and compares (file, line, rule).
fn assert_fixture(case: &str, expected: &[(&str, usize, Rule)]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/architecture")
        .join(case)
        .join("src");
    assert!(src.is_dir(), "missing fixture tree {}", src.display());
    let violations = check_tree(&src);
    let actual: Vec<(&str, usize, Rule)> = violations
        .iter()
        .map(|v| (v.file.as_str(), v.line, v.rule))
        .collect();
    let mut expected = expected.to_vec();
    expected.sort();
    assert_eq!(
        actual,
        expected,
        "fixture `{case}` reported:\n{}",
        render(&violations, "src/")
    );
}

#[test]
fn clean_tree_has_no_violations() {
    assert_fixture("clean", &[]);
}

#[test]
fn naming_a_higher_or_equal_layer_is_upward() {
    assert_fixture(
        "upward",
        &[
            // dispatch → workspace → dispatch, with store → workspace on the way.
            ("dispatch/mod.rs", 1, Rule::Cycle),
            ("dispatch/mod.rs", 4, Rule::Upward),
            ("dispatch/mod.rs", 8, Rule::Upward),
            ("git/mod.rs", 3, Rule::Upward),
            ("objects/mod.rs", 4, Rule::Upward),
            ("store/mod.rs", 3, Rule::Upward),
            ("store/mod.rs", 8, Rule::Upward),
            ("workspace/mod.rs", 7, Rule::Upward),
            ("workspace/mod.rs", 10, Rule::Upward),
            ("workspace/mod.rs", 13, Rule::Upward),
        ],
    );
}

#[test]
fn grouped_imports_report_the_offending_member() {
    assert_fixture(
        "grouped",
        &[
            ("objects/mod.rs", 3, Rule::Upward),
            ("objects/mod.rs", 7, Rule::Upward),
            ("objects/mod.rs", 12, Rule::Upward),
            ("objects/mod.rs", 13, Rule::Upward),
            ("objects/mod.rs", 17, Rule::Upward),
            ("objects/sequence.rs", 4, Rule::Upward),
        ],
    );
}

#[test]
fn slices_never_name_each_other() {
    assert_fixture(
        "slice",
        &[
            ("commands/knowledge.rs", 3, Rule::Slice),
            // knowledge → team → planning → knowledge.
            ("commands/knowledge.rs", 3, Rule::Cycle),
            ("commands/planning/add.rs", 6, Rule::Slice),
            ("commands/planning/mod.rs", 5, Rule::Slice),
            ("commands/planning/mod.rs", 6, Rule::Slice),
            ("commands/planning/mod.rs", 10, Rule::Slice),
            ("commands/team/mod.rs", 10, Rule::Slice),
        ],
    );
}

#[test]
fn front_ends_name_only_dispatch_and_model() {
    assert_fixture(
        "frontend",
        &[
            ("cli/mod.rs", 5, Rule::FrontEnd),
            ("cli/mod.rs", 6, Rule::FrontEnd),
            ("cli/mod.rs", 9, Rule::FrontEnd),
            ("cli/mod.rs", 10, Rule::FrontEnd),
            ("mcp/mod.rs", 5, Rule::FrontEnd),
        ],
    );
}

#[test]
fn pure_layers_do_no_io_and_name_little() {
    assert_fixture(
        "impure",
        &[
            ("model/clock.rs", 3, Rule::PureLayer),
            ("model/clock.rs", 4, Rule::PureLayer),
            ("model/clock.rs", 8, Rule::Impure),
            ("model/clock.rs", 9, Rule::Impure),
            ("model/clock.rs", 10, Rule::Impure),
            ("model/clock.rs", 11, Rule::Impure),
            ("model/clock.rs", 12, Rule::Impure),
            ("policy/x.rs", 3, Rule::PureLayer),
            ("policy/x.rs", 4, Rule::PureLayer),
            ("policy/x.rs", 8, Rule::Impure),
            ("policy/x.rs", 12, Rule::Impure),
            ("policy/x.rs", 16, Rule::Impure),
            ("policy/x.rs", 17, Rule::Impure),
        ],
    );
}

#[test]
fn comments_and_literals_are_not_code() {
    assert_fixture(
        "comments_and_strings",
        &[
            ("store/mod.rs", 40, Rule::Upward),
            ("store/mod.rs", 44, Rule::Upward),
        ],
    );
}

#[test]
fn unknown_modules_must_join_the_table() {
    assert_fixture(
        "unknown",
        &[
            ("store/mod.rs", 3, Rule::UnknownModule),
            ("store/mod.rs", 6, Rule::UnknownModule),
            ("telemetry/export.rs", 1, Rule::UnknownModule),
        ],
    );
}

#[test]
fn stripping_blanks_literals_and_keeps_lines_and_lifetimes() {
    let source = "a /* x\n/* y */ z */ b \"s\\\"\n\" r#\"q\"# 'c' '\\'' b'\\n' &'a c 'l: d";
    let stripped = strip_comments_and_literals(source);
    assert_eq!(stripped.lines().count(), source.lines().count());
    let idents: Vec<String> = tokenize(&stripped)
        .into_iter()
        .filter_map(|token| match token.kind {
            TokenKind::Ident(name) => Some(format!("{}@{}", name, token.line)),
            _ => None,
        })
        .collect();
    assert_eq!(idents, ["a@1", "b@2", "a@3", "c@3", "l@3", "d@3"]);
}

/// Checks an in-memory tree of `(path under src, text)` and returns (file, line, rule).
fn check_synthetic(
    files: &[(&str, &str)],
    allow: &Allowances<'_>,
) -> (Vec<(String, usize, Rule)>, Vec<Violation>) {
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|(file, text)| ((*file).to_owned(), (*text).to_owned()))
        .collect();
    let violations = check_sources(&sources, allow);
    let found = violations
        .iter()
        .map(|v| (v.file.clone(), v.line, v.rule))
        .collect();
    (found, violations)
}

#[test]
fn commands_make_no_file_system_write_or_lock() {
    let command = r#"use crate::objects::tasks;
use crate::journal::{self, NewEvent};
use crate::objects::notes as note_files;
fn run(ws: &Workspace) {
    let _guard = ws.fs.lock(&path);
    ws.fs
        .replace(&path, b"");
    tasks::write(ws, &at, &doc);
    journal::append(ws, event);
    note_files::create(ws);
    std::fs::write("x", b"");
    let _ = ws.fs.read(&path);
    doc.front.remove("key");
    tasks::list(ws, "p");
    // ws.fs.lock(&path) in a comment
    let text = "ws.fs.replace(";
    crate::objects::tasks::create(ws);
}
"#;
    let lower = "pub fn write(ws: &Workspace) { ws.fs.replace(&p, b\"\").ok(); }\n";
    let (found, violations) = check_synthetic(
        &[
            ("commands/mod.rs", ""),
            ("commands/planning/mod.rs", command),
            ("objects/tasks.rs", lower),
            (
                "ops/tasks.rs",
                "fn f(ws: &W) { ws.fs.lock(&p); crate::objects::tasks::write(ws); }",
            ),
        ],
        &STRICT,
    );
    let at = |line| {
        (
            "commands/planning/mod.rs".to_owned(),
            line,
            Rule::CommandsFs,
        )
    };
    assert_eq!(
        found,
        [at(5), at(7), at(8), at(9), at(10), at(11), at(17)],
        "{}",
        render(&violations, "src/")
    );
    assert!(violations[2].message.contains("objects::tasks::write"));
}

#[test]
fn pending_commands_fs_only_shrinks() {
    let writes = "fn f(ws: &W) { ws.fs.create_new(&p, b).ok(); }";
    let reads = "fn f(ws: &W) { ws.fs.read(&p).ok(); }";
    let files = [
        ("commands/mod.rs", ""),
        ("commands/a.rs", writes),
        ("commands/b.rs", reads),
        ("commands/c.rs", writes),
    ];
    let (found, _) = check_synthetic(
        &files,
        &Allowances {
            pending_commands_fs: &["commands/a.rs", "commands/b.rs"],
            known_cycles: &[],
        },
    );
    assert_eq!(
        found,
        [
            ("commands/b.rs".to_owned(), 1, Rule::CommandsFs),
            ("commands/c.rs".to_owned(), 1, Rule::CommandsFs),
        ]
    );
}

#[test]
fn import_cycles_between_file_modules_fail() {
    let files = [
        // objects::a ↔ objects::b: a cycle between siblings.
        ("objects/mod.rs", "use crate::objects::c::Z;\n"),
        ("objects/a.rs", "use super::b::X;\n"),
        ("objects/b.rs", "fn f() {}\nuse crate::objects::a::Y;\n"),
        // A parent naming its child and the child naming the parent is containment.
        ("objects/c.rs", "use super::Error;\n"),
        // journal::x ↔ journal::y: listed as known.
        ("journal/x.rs", "use crate::journal::y::Q;\n"),
        ("journal/y.rs", "use crate::journal::x::P;\n"),
    ];
    let (found, violations) = check_synthetic(
        &files,
        &Allowances {
            pending_commands_fs: &[],
            known_cycles: &[&["journal::y", "journal::x"], &["store::p", "store::q"]],
        },
    );
    assert_eq!(
        found,
        [
            ("(KNOWN_CYCLES)".to_owned(), 2, Rule::Cycle),
            ("objects/a.rs".to_owned(), 1, Rule::Cycle),
        ],
        "{}",
        render(&violations, "src/")
    );
    let message = &violations[1].message;
    assert!(
        message.contains("`objects::a` → `objects::b` (src/objects/a.rs:1)")
            && message.contains("`objects::b` → `objects::a` (src/objects/b.rs:2)"),
        "{message}"
    );
    assert!(violations[0].message.contains("store::p, store::q"));

    // Without the allowance, the journal cycle is reported too.
    let (found, _) = check_synthetic(&files, &STRICT);
    assert_eq!(
        found,
        [
            ("journal/x.rs".to_owned(), 1, Rule::Cycle),
            ("objects/a.rs".to_owned(), 1, Rule::Cycle),
        ]
    );
}
