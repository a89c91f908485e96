//! Runtime adapters, judged (docs/FORMAT.md §25): which `env_passthrough` entries are names
//! and which look like secrets, which flags are dangerous, and what the probes of
//! `runtime doctor` prove. Nothing is taken on trust: a capability is `verified` only when
//! every flag it needs was found in the installed binary's help text.

use serde::Serialize;

use crate::model::runtime::{KNOWN_CAPABILITIES, McpConfig, Probe, ProbeOutcome, Runtime};

/// Why an `env_passthrough` entry is refused. Messages never repeat the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvEntry {
    /// A variable name: fine.
    Name,
    /// A value that looks like a secret; the text says what it looks like.
    Secret(&'static str),
    /// Neither a name nor recognisably a secret.
    NotAName,
}

/// Token prefixes of well-known secrets, with the shortest length a real one has.
const SECRET_PREFIXES: [(&str, usize, &str); 21] = [
    ("sk-", 20, "an API key (`sk-…`)"),
    ("sk_live_", 16, "a Stripe key"),
    ("sk_test_", 16, "a Stripe key"),
    ("ghp_", 20, "a GitHub token"),
    ("gho_", 20, "a GitHub token"),
    ("ghu_", 20, "a GitHub token"),
    ("ghs_", 20, "a GitHub token"),
    ("ghr_", 20, "a GitHub token"),
    ("github_pat_", 20, "a GitHub token"),
    ("glpat-", 20, "a GitLab token"),
    ("xox", 15, "a Slack token"),
    ("AKIA", 16, "an AWS access key"),
    ("ASIA", 16, "an AWS access key"),
    ("AIza", 30, "a Google API key"),
    ("dacli_", 20, "a dacli agent token"),
    ("-----BEGIN", 10, "a private key"),
    ("eyJ", 20, "a JSON web token"),
    ("npm_", 30, "an npm token"),
    ("hf_", 30, "a Hugging Face token"),
    ("pypi-", 30, "a PyPI token"),
    ("Bearer ", 8, "an authorization header"),
];

/// Classifies one `env_passthrough` entry: a variable name (`[A-Za-z_][A-Za-z0-9_]*`, at
/// most 128 characters), a value that looks like a secret, or neither.
pub fn env_entry(entry: &str) -> EnvEntry {
    if let Some((_, _, what)) = SECRET_PREFIXES
        .iter()
        .find(|(prefix, min, _)| entry.starts_with(prefix) && entry.len() >= *min)
    {
        return EnvEntry::Secret(what);
    }
    if entry.contains('=') {
        return EnvEntry::Secret("an assignment (`NAME=value`)");
    }
    let has = |f: fn(&char) -> bool| entry.chars().any(|c| f(&c));
    let long = entry.chars().count();
    if long >= 24 && entry.chars().all(|c| c.is_ascii_hexdigit()) && has(char::is_ascii_digit) {
        return EnvEntry::Secret("a hexadecimal key");
    }
    if long >= 20
        && has(char::is_ascii_lowercase)
        && has(char::is_ascii_uppercase)
        && has(char::is_ascii_digit)
        && !entry.contains('_')
    {
        return EnvEntry::Secret("a random token (mixed case and digits)");
    }
    if long >= 20 && has(|c| matches!(c, '+' | '/' | '.' | '-')) && !has(|c| c.is_whitespace()) {
        return EnvEntry::Secret("an encoded value");
    }
    if is_env_name(entry) {
        EnvEntry::Name
    } else {
        EnvEntry::NotAName
    }
}

/// Whether `s` is an environment variable name dacli accepts.
pub fn is_env_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Substrings that mark a flag or value as lifting a runtime's permission checks.
const DANGEROUS_MARKS: [&str; 6] = [
    "danger",
    "yolo",
    "bypass",
    "skip-permissions",
    "no-sandbox",
    "full-access",
];

/// The first token of `args` that is a dangerous-permission flag or value: one the adapter
/// lists in `dangerous`, or one whose name carries a mark such as `dangerously` or `yolo`.
pub fn dangerous_token<'a>(args: &'a [String], declared: &[String]) -> Option<&'a str> {
    args.iter().map(String::as_str).find(|token| {
        let name = token.split('=').next().unwrap_or(token);
        let lower = name.to_ascii_lowercase();
        declared.iter().any(|d| d == name) || DANGEROUS_MARKS.iter().any(|m| lower.contains(m))
    })
}

/// What one token of an invoke fragment is checked as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `--flag` or `-f` (the part before `=`): must appear in the help text as a flag.
    Flag(String),
    /// A word before any flag (`exec` in `codex exec`): must appear as a word.
    Subcommand(String),
}

impl Token {
    pub fn text(&self) -> &str {
        match self {
            Token::Flag(s) | Token::Subcommand(s) => s,
        }
    }
}

/// The tokens of `fragment` to look up in help text: every flag, and the words before the
/// first flag (subcommands). Words after a flag are its values and are not checked.
pub fn checked_tokens(fragment: &[String]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut seen_flag = false;
    for t in fragment {
        if t.starts_with('-') && t.len() > 1 {
            seen_flag = true;
            let name = t.split('=').next().unwrap_or(t);
            out.push(Token::Flag(name.to_string()));
        } else if !seen_flag && !t.is_empty() {
            out.push(Token::Subcommand(t.clone()));
        }
    }
    out
}

/// Whether `needle` occurs in `text` as a whole token: neither neighbour is a letter, a digit,
/// `-` or `_` (so `--print` is not found in `--print-config`, nor `exec` in `execute`).
pub fn contains_token(text: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let part = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(needle).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + needle.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// Decodes probe output for searching: ANSI escape sequences removed. `Err` says why the
/// output is garbage (NUL bytes, invalid UTF-8, mostly control characters), in which case
/// nothing may be concluded from it.
pub fn decode(bytes: &[u8]) -> Result<String, &'static str> {
    if bytes.contains(&0) {
        return Err("NUL bytes");
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "invalid UTF-8")?;
    let clean = strip_ansi(text);
    let total = clean.chars().count();
    let control = clean
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        .count();
    if total > 0 && control * 20 > total {
        return Err("control characters");
    }
    Ok(clean)
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // CSI: parameters and intermediates, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A probe that ran: its output decoded for searching, or marked as garbage (see [`decode`]).
pub fn probe_ran(
    args: &[String],
    exit_code: Option<i32>,
    timed_out: bool,
    ms: u64,
    output: &[u8],
) -> Probe {
    let (text, garbage) = match decode(output) {
        Ok(t) => (t, None),
        Err(why) => (String::new(), Some(why.to_string())),
    };
    Probe {
        args: args.to_vec(),
        outcome: if timed_out {
            ProbeOutcome::TimedOut
        } else {
            ProbeOutcome::Completed
        },
        exit_code,
        ms,
        garbage,
        detail: None,
        text,
    }
}

/// What a check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Verified,
    Absent,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Absent => "absent",
            Status::Unknown => "unknown",
        }
    }
}

/// One declared flag (or subcommand) checked against the help text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlagCheck {
    pub flag: String,
    /// The `invoke` key that declares it.
    #[serde(rename = "for")]
    pub for_key: String,
    pub status: Status,
}

/// One capability, declared or known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityCheck {
    pub name: String,
    pub declared: bool,
    pub status: Status,
    pub detail: String,
}

/// The verdict on one runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// `ok` (found, version read, every declared capability verified, no problem),
    /// `degraded` (found, but something is not as declared) or `missing` (no binary).
    pub status: &'static str,
    pub version: Option<String>,
    pub flags: Vec<FlagCheck>,
    pub capabilities: Vec<CapabilityCheck>,
    /// One precise line per problem.
    pub problems: Vec<String>,
}

/// How the binary was looked for, for the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found,
    /// Not found; the text says where it was looked for.
    Missing(String),
}

/// Judges `rt` from the lookup and the probes (the version probe, then one per
/// `detect.help` entry). Pure: the same inputs always give the same verdict.
pub fn judge(rt: &Runtime, lookup: &Lookup, version: Option<&Probe>, help: &[Probe]) -> Verdict {
    let mut problems = Vec::new();
    for (i, e) in rt.env_passthrough.iter().enumerate() {
        match env_entry(e) {
            EnvEntry::Name => {}
            EnvEntry::Secret(what) => problems.push(format!(
                "`env_passthrough` entry {} looks like {what}, not a variable name: store the NAME only",
                i + 1
            )),
            EnvEntry::NotAName => problems.push(format!(
                "`env_passthrough` entry {} is not a variable name",
                i + 1
            )),
        }
    }
    if let Lookup::Missing(where_) = lookup {
        problems.insert(0, where_.clone());
        let flags = all_tokens(rt)
            .into_iter()
            .map(|(key, t)| FlagCheck {
                flag: t.text().to_string(),
                for_key: key,
                status: Status::Unknown,
            })
            .collect();
        let capabilities = capability_names(rt)
            .into_iter()
            .map(|(name, declared)| CapabilityCheck {
                detail: if declared {
                    format!("binary `{}` not found", rt.binary)
                } else {
                    "not declared by the adapter".into()
                },
                name,
                declared,
                status: Status::Absent,
            })
            .collect();
        return Verdict {
            status: "missing",
            version: None,
            flags,
            capabilities,
            problems,
        };
    }
    let version = read_version(rt, version, &mut problems);
    let help_text = help_text(rt, help, &mut problems);
    let flags: Vec<FlagCheck> = all_tokens(rt)
        .into_iter()
        .map(|(key, t)| {
            let status = match &help_text {
                None => Status::Unknown,
                Some(text) if contains_token(text, t.text()) => Status::Verified,
                Some(_) => Status::Absent,
            };
            FlagCheck {
                flag: t.text().to_string(),
                for_key: key,
                status,
            }
        })
        .collect();
    for f in flags.iter().filter(|f| f.status == Status::Absent) {
        problems.push(format!(
            "`{}` (invoke.{}) is not in the output of {}",
            f.flag,
            f.for_key,
            help_commands(rt)
        ));
    }
    let capabilities: Vec<CapabilityCheck> = capability_names(rt)
        .into_iter()
        .map(|(name, declared)| capability(rt, &name, declared, &flags, help_text.is_some()))
        .collect();
    for c in capabilities
        .iter()
        .filter(|c| c.declared && c.status == Status::Unknown)
    {
        problems.push(format!("capability `{}` is unknown: {}", c.name, c.detail));
    }
    // An absent flag already has its line; a capability absent for another reason (a
    // dangerous flag) gets one of its own.
    for c in capabilities
        .iter()
        .filter(|c| c.declared && c.status == Status::Absent)
        .filter(|c| {
            !flags
                .iter()
                .any(|f| f.for_key == c.name && f.status == Status::Absent)
        })
    {
        problems.push(format!("capability `{}` is absent: {}", c.name, c.detail));
    }
    let ok = version.is_some()
        && problems.is_empty()
        && capabilities
            .iter()
            .filter(|c| c.declared)
            .all(|c| c.status == Status::Verified);
    Verdict {
        status: if ok { "ok" } else { "degraded" },
        version,
        flags,
        capabilities,
        problems,
    }
}

/// `claude --version`, for messages.
fn shown(rt: &Runtime, args: &[String]) -> String {
    let mut words = vec![rt.binary.clone()];
    words.extend(args.iter().cloned());
    format!("`{}`", words.join(" "))
}

fn help_commands(rt: &Runtime) -> String {
    let list: Vec<String> = rt.detect.help.iter().map(|a| shown(rt, a)).collect();
    list.join(" and ")
}

/// Why a probe that did not complete tells nothing, or `None` when it completed.
fn not_completed(rt: &Runtime, p: &Probe) -> Option<String> {
    let cmd = shown(rt, &p.args);
    let detail = p.detail.as_deref().unwrap_or("");
    match p.outcome {
        ProbeOutcome::Completed => None,
        ProbeOutcome::TimedOut if detail.is_empty() => {
            Some(format!("{cmd} timed out after {} ms", p.ms))
        }
        ProbeOutcome::TimedOut => Some(format!("{cmd} timed out after {detail}")),
        ProbeOutcome::FailedToStart => Some(format!("{cmd} could not be started: {detail}")),
        ProbeOutcome::Refused => Some(format!("{cmd} was not run: {detail}")),
        ProbeOutcome::Skipped => Some(format!("{cmd} was not run: {detail}")),
    }
}

fn read_version(rt: &Runtime, probe: Option<&Probe>, problems: &mut Vec<String>) -> Option<String> {
    let Some(p) = probe else {
        problems.push("no version probe was run".into());
        return None;
    };
    if let Some(why) = not_completed(rt, p) {
        problems.push(why);
        return None;
    }
    let cmd = shown(rt, &p.args);
    if let Some(g) = &p.garbage {
        problems.push(format!("{cmd} printed garbage ({g}), not a version"));
        return None;
    }
    if p.exit_code != Some(0) {
        let how = p
            .exit_code
            .map_or("was killed by a signal".to_string(), |c| {
                format!("exited {c}")
            });
        problems.push(format!("{cmd} {how}"));
        return None;
    }
    match extract_version(&rt.detect.pattern, &p.text) {
        Err(e) => {
            problems.push(format!(
                "`detect.pattern` is not a valid regular expression: {e}"
            ));
            None
        }
        Ok(None) => {
            problems.push(format!(
                "{cmd} printed {} bytes matching no version (`detect.pattern` = `{}`)",
                p.text.len(),
                rt.detect.pattern
            ));
            None
        }
        Ok(Some(v)) => Some(v),
    }
}

/// The version in `text`: the pattern's first capture group, else its whole match.
pub fn extract_version(pattern: &str, text: &str) -> Result<Option<String>, String> {
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            e.to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string()
        })?;
    Ok(re.captures(text).and_then(|c| {
        c.get(1)
            .or_else(|| c.get(0))
            .map(|m| m.as_str().trim().to_string())
            .filter(|v| !v.is_empty() && v.len() <= 64)
    }))
}

/// The joint help text, or `None` (with a problem line each) when no help probe gave usable
/// output.
fn help_text(rt: &Runtime, help: &[Probe], problems: &mut Vec<String>) -> Option<String> {
    let mut text = String::new();
    let mut usable = false;
    for p in help {
        if let Some(why) = not_completed(rt, p) {
            problems.push(why);
            continue;
        }
        let cmd = shown(rt, &p.args);
        if let Some(g) = &p.garbage {
            problems.push(format!(
                "{cmd} printed garbage ({g}); no flag can be checked in it"
            ));
            continue;
        }
        if p.text.trim().is_empty() {
            let how = p
                .exit_code
                .map_or("was killed".to_string(), |c| format!("exited {c}"));
            problems.push(format!("{cmd} {how} with no output"));
            continue;
        }
        usable = true;
        text.push_str(&p.text);
        text.push('\n');
    }
    usable.then_some(text)
}

/// Every checked token of every invoke fragment, with its key, in file order.
fn all_tokens(rt: &Runtime) -> Vec<(String, Token)> {
    rt.invoke
        .iter()
        .flat_map(|(key, frag)| checked_tokens(frag).into_iter().map(|t| (key.clone(), t)))
        .collect()
}

/// The declared capabilities in file order, then the known ones not declared.
fn capability_names(rt: &Runtime) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for c in &rt.capabilities {
        if !out.iter().any(|(n, _)| n == c) {
            out.push((c.clone(), true));
        }
    }
    for c in KNOWN_CAPABILITIES {
        if !out.iter().any(|(n, _)| n == c) {
            out.push((c.to_string(), false));
        }
    }
    out
}

fn capability(
    rt: &Runtime,
    name: &str,
    declared: bool,
    flags: &[FlagCheck],
    have_help: bool,
) -> CapabilityCheck {
    let check = |status: Status, detail: String| CapabilityCheck {
        name: name.to_string(),
        declared,
        status,
        detail,
    };
    if !declared {
        return check(Status::Absent, "not declared by the adapter".into());
    }
    let Some(fragment) = rt.fragment(name) else {
        return check(
            Status::Unknown,
            format!("declared, but `invoke.{name}` names no flag to check"),
        );
    };
    if let Some(bad) = dangerous_token(fragment, &rt.dangerous) {
        return check(
            Status::Absent,
            format!(
                "`invoke.{name}` uses the dangerous-permission flag `{bad}`, which dacli never uses"
            ),
        );
    }
    let mine: Vec<&FlagCheck> = flags.iter().filter(|f| f.for_key == name).collect();
    if mine.is_empty() {
        return check(
            Status::Unknown,
            format!("declared, but `invoke.{name}` names no flag to check"),
        );
    }
    if !have_help {
        return check(
            Status::Unknown,
            "no help output to check its flags against".into(),
        );
    }
    let missing: Vec<&str> = mine
        .iter()
        .filter(|f| f.status != Status::Verified)
        .map(|f| f.flag.as_str())
        .collect();
    if missing.is_empty() {
        let all: Vec<String> = mine.iter().map(|f| format!("`{}`", f.flag)).collect();
        check(
            Status::Verified,
            format!("{} found in the help", all.join(", ")),
        )
    } else {
        let list: Vec<String> = missing.iter().map(|f| format!("`{f}`")).collect();
        check(
            Status::Absent,
            format!(
                "{} is not in the output of {}",
                list.join(", "),
                help_commands(rt)
            ),
        )
    }
}

/// The snippet that registers an MCP server named `server`, started as `command args…`, with
/// the variable `var` forwarded as `cfg` says. JSON is pretty-printed; both end in a newline.
pub fn mcp_snippet(
    cfg: &McpConfig,
    server: &str,
    command: &str,
    args: &[String],
    var: &str,
) -> String {
    let by_names = cfg.env == "names";
    let reference = cfg.env.replace("VAR", var);
    if cfg.format == "toml" {
        let quoted: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
        let env_line = if by_names {
            format!("env_vars = [{}]", toml_string(var))
        } else {
            format!("env = {{ {var} = {} }}", toml_string(&reference))
        };
        return format!(
            "[{}.{}]\ncommand = {}\nargs = [{}]\n{env_line}\n",
            toml_key(&cfg.key),
            toml_key(server),
            toml_string(command),
            quoted.join(", ")
        );
    }
    let mut entry = serde_json::Map::new();
    entry.insert("command".into(), command.into());
    entry.insert("args".into(), args.to_vec().into());
    if by_names {
        entry.insert("env_vars".into(), vec![var.to_string()].into());
    } else {
        entry.insert("env".into(), serde_json::json!({ var: reference }));
    }
    let mut servers = serde_json::Map::new();
    servers.insert(server.to_string(), entry.into());
    let mut doc = serde_json::Map::new();
    doc.insert(cfg.key.clone(), servers.into());
    let doc = serde_json::Value::Object(doc);
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string());
    text.push('\n');
    text
}

/// A TOML basic string: the same escapes as JSON for everything a path can hold.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A TOML key: bare when it can be, else quoted.
fn toml_key(s: &str) -> String {
    let bare = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare { s.to_string() } else { toml_string(s) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml_edit::DocumentMut;

    fn runtime(extra: &str) -> Runtime {
        let doc: DocumentMut = format!(
            "kind = \"runtime\"\nname = \"x\"\ncreated = 2026-03-02T09:06:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWR660YQF1Y2A1E4WME2TC\"\nsummary = \"s\"\nbinary = \"x\"\n{extra}"
        )
        .parse()
        .expect("toml");
        Runtime::from_front(&doc, "x").expect("runtime")
    }

    fn completed(args: &[&str], text: &str) -> Probe {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        probe_ran(&args, Some(0), false, 3, text.as_bytes())
    }

    #[test]
    fn env_entries_names_and_secrets() {
        for name in [
            "ANTHROPIC_API_KEY",
            "_X",
            "npm_config_cache",
            "HOME",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert_eq!(env_entry(name), EnvEntry::Name, "{name}");
        }
        for secret in [
            "sk-ant-api03-abcdefghijklmnop",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "AKIAIOSFODNN7EXAMPLE",
            "KEY=value",
            "0123456789abcdef0123456789abcdef",
            "aB3dE5gH7jK9mN1pQ3sT5vX7",
            "dGhpcyBpcyBhIHNlY3JldA/x+y==",
            "dacli_a-root_0123456789abcdef",
        ] {
            assert!(matches!(env_entry(secret), EnvEntry::Secret(_)), "{secret}");
        }
        for bad in ["", "1ABC", "A B", "a-b"] {
            assert_eq!(env_entry(bad), EnvEntry::NotAName, "{bad}");
        }
    }

    #[test]
    fn dangerous_flags_are_found_by_declaration_and_by_mark() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            dangerous_token(&args(&["--help", "--dangerously-skip-permissions"]), &[]),
            Some("--dangerously-skip-permissions")
        );
        assert_eq!(dangerous_token(&args(&["-y"]), &args(&["-y"])), Some("-y"));
        assert_eq!(
            dangerous_token(&args(&["--sandbox", "danger-full-access"]), &[]),
            Some("danger-full-access")
        );
        assert_eq!(dangerous_token(&args(&["--version"]), &args(&["-y"])), None);
    }

    #[test]
    fn tokens_are_whole_words() {
        assert!(contains_token("  -p, --print   Print", "--print"));
        assert!(!contains_token("--print-config", "--print"));
        assert!(contains_token("Commands:\n  exec  Run", "exec"));
        assert!(!contains_token("execute things", "exec"));
        assert!(contains_token("--output-format=<fmt>", "--output-format"));
        assert_eq!(
            checked_tokens(&["exec".into(), "--sandbox=x".into(), "read-only".into()]),
            vec![
                Token::Subcommand("exec".into()),
                Token::Flag("--sandbox".into())
            ]
        );
    }

    #[test]
    fn garbage_is_never_searched() {
        assert_eq!(decode(b"a\0b"), Err("NUL bytes"));
        assert_eq!(decode(&[0xff, 0xfe]), Err("invalid UTF-8"));
        assert_eq!(decode(b"\x01\x02\x03\x04x"), Err("control characters"));
        assert_eq!(decode(b"\x1b[1m--print\x1b[0m").as_deref(), Ok("--print"));
    }

    #[test]
    fn a_verified_runtime_and_a_missing_flag() {
        let rt = runtime(
            "capabilities = [\"non_interactive\", \"json_output\"]\ninvoke = { prompt = \"argument\", non_interactive = [\"--print\"], json_output = [\"--output-format\", \"json\"] }\n",
        );
        let v = completed(&["--version"], "1.2.3 (Tool)\n");
        let h = completed(&["--help"], "  --print  print\n  --output-format <f>\n");
        let verdict = judge(&rt, &Lookup::Found, Some(&v), &[h]);
        assert_eq!(verdict.status, "ok", "{verdict:?}");
        assert_eq!(verdict.version.as_deref(), Some("1.2.3"));
        assert!(
            verdict
                .capabilities
                .iter()
                .filter(|c| c.declared)
                .all(|c| c.status == Status::Verified)
        );
        let h = completed(&["--help"], "  --print  print\n");
        let verdict = judge(&rt, &Lookup::Found, Some(&v), &[h]);
        assert_eq!(verdict.status, "degraded");
        let json = verdict
            .capabilities
            .iter()
            .find(|c| c.name == "json_output")
            .expect("json");
        assert_eq!(json.status, Status::Absent);
        assert_eq!(
            verdict.problems,
            vec!["`--output-format` (invoke.json_output) is not in the output of `x --help`"]
        );
    }

    #[test]
    fn no_usable_help_makes_capabilities_unknown_never_verified() {
        let rt = runtime(
            "capabilities = [\"mcp\", \"streaming\"]\ninvoke = { mcp = [\"--mcp-config\"] }\n",
        );
        let v = completed(&["--version"], "1.0.0");
        let args = vec!["--help".to_string()];
        for help in [
            probe_ran(&args, None, true, 500, b""),
            probe_ran(&args, Some(0), false, 1, b"--mcp-config\0"),
            probe_ran(&args, Some(2), false, 1, b""),
        ] {
            let verdict = judge(&rt, &Lookup::Found, Some(&v), &[help]);
            let mcp = &verdict.capabilities[0];
            assert_eq!((mcp.name.as_str(), mcp.status), ("mcp", Status::Unknown));
            assert_eq!(
                verdict.capabilities[1].status,
                Status::Unknown,
                "no flag for streaming"
            );
            assert_eq!(verdict.status, "degraded");
        }
    }

    #[test]
    fn a_fragment_with_a_dangerous_flag_is_never_verified() {
        let rt = runtime(
            "capabilities = [\"non_interactive\"]\ninvoke = { non_interactive = [\"--print\", \"--yolo\"] }\n",
        );
        let v = completed(&["--version"], "1.0.0");
        let h = completed(&["--help"], "--print --yolo");
        let verdict = judge(&rt, &Lookup::Found, Some(&v), &[h]);
        let c = &verdict.capabilities[0];
        assert_eq!(c.status, Status::Absent);
        assert_eq!(
            verdict.problems,
            vec![
                "capability `non_interactive` is absent: `invoke.non_interactive` uses the dangerous-permission flag `--yolo`, which dacli never uses"
            ]
        );
    }

    #[test]
    fn a_missing_binary_has_every_capability_absent() {
        let rt = runtime("capabilities = [\"mcp\"]\ninvoke = { mcp = [\"--mcp-config\"] }\n");
        let verdict = judge(
            &rt,
            &Lookup::Missing("`x` is not on PATH".into()),
            None,
            &[],
        );
        assert_eq!(verdict.status, "missing");
        assert!(
            verdict
                .capabilities
                .iter()
                .all(|c| c.status == Status::Absent)
        );
        assert_eq!(verdict.flags[0].status, Status::Unknown);
        assert_eq!(verdict.problems, vec!["`x` is not on PATH"]);
    }

    #[test]
    fn versions_come_from_the_pattern() {
        assert_eq!(
            extract_version("codex-cli ([0-9.]+)", "codex-cli 0.46.0\n"),
            Ok(Some("0.46.0".into()))
        );
        assert_eq!(
            extract_version(crate::model::runtime::DEFAULT_PATTERN, "v2.10.1 (build 7)"),
            Ok(Some("2.10.1".into()))
        );
        assert!(extract_version("(", "x").is_err());
        assert_eq!(extract_version("[0-9]+\\.[0-9]+", "no digits"), Ok(None));
    }

    #[test]
    fn snippets_match_the_clients_formats() {
        let json = McpConfig {
            file: ".mcp.json".into(),
            format: "json".into(),
            key: "mcpServers".into(),
            env: "${VAR}".into(),
        };
        let args = vec!["mcp".to_string(), "serve".to_string()];
        assert_eq!(
            mcp_snippet(&json, "dacli", "dacli", &args, "DACLI_AGENT"),
            "{\n  \"mcpServers\": {\n    \"dacli\": {\n      \"command\": \"dacli\",\n      \"args\": [\n        \"mcp\",\n        \"serve\"\n      ],\n      \"env\": {\n        \"DACLI_AGENT\": \"${DACLI_AGENT}\"\n      }\n    }\n  }\n}\n"
        );
        let toml = McpConfig {
            file: ".codex/config.toml".into(),
            format: "toml".into(),
            key: "mcp_servers".into(),
            env: "names".into(),
        };
        assert_eq!(
            mcp_snippet(&toml, "dacli", "dacli", &args, "DACLI_AGENT"),
            "[mcp_servers.dacli]\ncommand = \"dacli\"\nargs = [\"mcp\", \"serve\"]\nenv_vars = [\"DACLI_AGENT\"]\n"
        );
    }
}
