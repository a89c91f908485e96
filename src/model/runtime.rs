//! Runtime adapters (docs/FORMAT.md §25): how dacli finds, probes and would invoke a coding
//! agent's CLI. Declarations only: `runtime doctor` decides what the installed binary really
//! supports.

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, Item, TableLike, Value};

use super::fields::{FieldError, Fields};

/// The capabilities dacli knows by name; an adapter may declare others.
pub const KNOWN_CAPABILITIES: [&str; 4] =
    ["non_interactive", "read_only_sandbox", "mcp", "json_output"];

/// How a prompt reaches the runtime: `invoke.prompt`.
pub const PROMPT_MODES: [&str; 3] = ["argument", "stdin", "file"];

/// The formats of a client's MCP configuration file: `mcp_config.format`.
pub const MCP_FORMATS: [&str; 2] = ["json", "toml"];

/// The version probe's pattern when the adapter gives none: the first dotted number.
pub const DEFAULT_PATTERN: &str = "[0-9]+(?:\\.[0-9]+)+";

/// The probes' timeout when the adapter gives none, and its bounds.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
pub const MIN_TIMEOUT_MS: u64 = 100;
pub const MAX_TIMEOUT_MS: u64 = 120_000;

/// `detect`: how to read the version and the help text of the installed binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detect {
    /// Arguments of the version probe (`["--version"]`).
    pub version: Vec<String>,
    /// A regular expression; the version is its first capture group, else the whole match.
    pub pattern: String,
    /// Arguments of each help probe; the declared flags are looked up in their joint output.
    pub help: Vec<Vec<String>>,
    pub timeout_ms: u64,
}

impl Default for Detect {
    fn default() -> Self {
        Detect {
            version: vec!["--version".into()],
            pattern: DEFAULT_PATTERN.into(),
            help: vec![vec!["--help".into()]],
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

/// `mcp_config`: how the runtime's client registers an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpConfig {
    /// Where the snippet goes (a repository path, or `~/…`).
    pub file: String,
    /// `json` or `toml`.
    pub format: String,
    /// The key (JSON) or table (TOML) holding the servers: `mcpServers`, `mcp_servers`.
    pub key: String,
    /// How the token is forwarded: `names` (an `env_vars` list of variable names), or a
    /// reference pattern in which `VAR` stands for the variable's name (`${VAR}`).
    pub env: String,
}

/// A parsed runtime adapter.
///
/// Invariant: `name` equals the file stem; `invoke` keeps the file's order and holds every
/// key of the `invoke` table except `prompt`, each an argument vector fragment.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub name: String,
    pub created: jiff::Timestamp,
    pub created_by: String,
    pub owner: String,
    pub summary: String,
    pub preset: Option<String>,
    pub binary: String,
    pub detect: Detect,
    /// `argument`, `stdin` or `file`.
    pub prompt: String,
    pub invoke: Vec<(String, Vec<String>)>,
    pub capabilities: Vec<String>,
    pub dangerous: Vec<String>,
    pub env_passthrough: Vec<String>,
    pub mcp_config: Option<McpConfig>,
}

impl Runtime {
    /// Parses the adapter file `<stem>.md`.
    pub fn from_front(front: &DocumentMut, stem: &str) -> Result<Runtime, FieldError> {
        let f = Fields(front.as_table());
        f.expect_kind("runtime")?;
        let name = f.str("name")?;
        if name != stem {
            return Err(FieldError::id_mismatch(format!(
                "`name` \"{name}\" does not match the filename \"{stem}.md\""
            )));
        }
        let binary = f.str("binary")?;
        if binary.trim().is_empty() || binary.contains('\0') {
            return Err(FieldError::schema("`binary` must name a program"));
        }
        let (prompt, invoke) = invoke(f.get("invoke"))?;
        Ok(Runtime {
            name: name.to_string(),
            created: f.time("created")?,
            created_by: f.str("created_by")?.to_string(),
            owner: f.str("owner")?.to_string(),
            summary: f.str("summary")?.to_string(),
            preset: f.opt_str("preset")?.map(String::from),
            binary: binary.to_string(),
            detect: detect(f.get("detect"))?,
            prompt,
            invoke,
            capabilities: owned(f.str_list("capabilities")?),
            dangerous: owned(f.str_list("dangerous")?),
            env_passthrough: owned(f.str_list("env_passthrough")?),
            mcp_config: f.get("mcp_config").map(mcp_config).transpose()?,
        })
    }

    /// The invoke fragment `key`, if declared.
    pub fn fragment(&self, key: &str) -> Option<&[String]> {
        self.invoke
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }
}

/// What happened to one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// It ran to its end (any exit code).
    Completed,
    /// Killed at the timeout.
    TimedOut,
    /// The program could not be started.
    FailedToStart,
    /// Not run: its arguments hold a dangerous-permission flag.
    Refused,
    /// Not run: an earlier probe showed it would be pointless.
    Skipped,
}

/// One probe of `runtime doctor` and what it printed (stdout, then stderr, decoded for
/// searching; empty when the output was garbage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub args: Vec<String>,
    pub outcome: ProbeOutcome,
    pub exit_code: Option<i32>,
    pub ms: u64,
    /// Why the output is garbage (NUL bytes, invalid UTF-8, ...); then `text` is empty.
    pub garbage: Option<String>,
    /// For `failed_to_start`, `refused` and `skipped`: why.
    pub detail: Option<String>,
    pub text: String,
}

impl Probe {
    /// A probe that did not run.
    pub fn not_run(args: &[String], outcome: ProbeOutcome, detail: impl Into<String>) -> Probe {
        Probe {
            args: args.to_vec(),
            outcome,
            exit_code: None,
            ms: 0,
            garbage: None,
            detail: Some(detail.into()),
            text: String::new(),
        }
    }

    /// Whether the result may be cached: it ran to its end, or was refused for its arguments.
    /// A timeout or a failed start may be transient, and is probed again next time.
    pub fn cacheable(&self) -> bool {
        matches!(
            self.outcome,
            ProbeOutcome::Completed | ProbeOutcome::Refused
        )
    }
}

/// The runtime a role routes its agents to: the role file's optional `runtime` key.
pub fn role_runtime(front: &DocumentMut) -> Result<Option<&str>, FieldError> {
    Fields(front.as_table()).opt_str("runtime")
}

fn table<'a>(item: &'a Item, key: &str) -> Result<&'a dyn TableLike, FieldError> {
    item.as_table_like()
        .ok_or_else(|| FieldError::schema(format!("`{key}` must be a table")))
}

fn strings(item: &Item, what: &str) -> Result<Vec<String>, FieldError> {
    let bad = || FieldError::schema(format!("`{what}` must be an array of strings"));
    let array = item.as_array().ok_or_else(bad)?;
    array
        .iter()
        .map(|v| v.as_str().map(String::from).ok_or_else(bad))
        .collect()
}

fn detect(item: Option<&Item>) -> Result<Detect, FieldError> {
    let mut d = Detect::default();
    let Some(item) = item else {
        return Ok(d);
    };
    let t = table(item, "detect")?;
    if let Some(v) = t.get("version") {
        d.version = strings(v, "detect.version")?;
    }
    if let Some(v) = t.get("pattern") {
        d.pattern = v
            .as_str()
            .ok_or_else(|| FieldError::schema("`detect.pattern` must be a string"))?
            .to_string();
    }
    if let Some(v) = t.get("help") {
        let bad = || FieldError::schema("`detect.help` must be an array of argument arrays");
        d.help = v
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|probe| match probe {
                Value::Array(a) => a
                    .iter()
                    .map(|s| s.as_str().map(String::from).ok_or_else(bad))
                    .collect(),
                _ => Err(bad()),
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(v) = t.get("timeout_ms") {
        let ms = v.as_integer().ok_or_else(|| {
            FieldError::schema("`detect.timeout_ms` must be an integer (milliseconds)")
        })?;
        d.timeout_ms = u64::try_from(ms)
            .ok()
            .filter(|ms| (MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(ms))
            .ok_or_else(|| {
                FieldError::schema(format!(
                    "`detect.timeout_ms` must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}"
                ))
            })?;
    }
    Ok(d)
}

type Fragments = Vec<(String, Vec<String>)>;

fn invoke(item: Option<&Item>) -> Result<(String, Fragments), FieldError> {
    let Some(item) = item else {
        return Ok(("argument".into(), Vec::new()));
    };
    let t = table(item, "invoke")?;
    let mut prompt = "argument".to_string();
    let mut out = Vec::new();
    for (key, v) in t.iter() {
        if key == "prompt" {
            let p = v.as_str().filter(|p| PROMPT_MODES.contains(p));
            prompt = p
                .ok_or_else(|| {
                    FieldError::schema(format!(
                        "`invoke.prompt` must be one of {}",
                        PROMPT_MODES.join(", ")
                    ))
                })?
                .to_string();
        } else {
            out.push((key.to_string(), strings(v, &format!("invoke.{key}"))?));
        }
    }
    Ok((prompt, out))
}

fn mcp_config(item: &Item) -> Result<McpConfig, FieldError> {
    let t = table(item, "mcp_config")?;
    let text = |key: &str| -> Result<String, FieldError> {
        t.get(key)
            .and_then(Item::as_str)
            .map(String::from)
            .ok_or_else(|| FieldError::schema(format!("`mcp_config.{key}` must be a string")))
    };
    let format = text("format")?;
    if !MCP_FORMATS.contains(&format.as_str()) {
        return Err(FieldError::schema(format!(
            "`mcp_config.format` is \"{format}\"; expected one of {}",
            MCP_FORMATS.join(", ")
        )));
    }
    let env = text("env")?;
    if env != "names" && !env.contains("VAR") {
        return Err(FieldError::schema(
            "`mcp_config.env` must be `names` or a reference pattern containing `VAR`",
        ));
    }
    let key = text("key")?;
    if key.is_empty() {
        return Err(FieldError::schema("`mcp_config.key` must not be empty"));
    }
    Ok(McpConfig {
        file: text("file")?,
        format,
        key,
        env,
    })
}

fn owned(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(String::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "kind = \"runtime\"\nname = \"x\"\ncreated = 2026-03-02T09:06:00Z\ncreated_by = \"a-root\"\nowner = \"a-root\"\nrev = \"01KJPWR660YQF1Y2A1E4WME2TC\"\nsummary = \"s\"\nbinary = \"x\"\n";

    fn parse(extra: &str) -> Result<Runtime, FieldError> {
        let doc: DocumentMut = format!("{HEAD}{extra}").parse().expect("toml");
        Runtime::from_front(&doc, "x")
    }

    #[test]
    fn defaults_fill_what_a_hand_written_file_leaves_out() {
        let r = parse("").expect("parses");
        assert_eq!(r.detect, Detect::default());
        assert_eq!(r.prompt, "argument");
        assert!(r.invoke.is_empty() && r.mcp_config.is_none());
    }

    #[test]
    fn inline_and_standard_tables_parse_alike() {
        let inline = parse("detect = { version = [\"-V\"], help = [[\"help\"], [\"exec\", \"--help\"]], timeout_ms = 500 }\ninvoke = { prompt = \"stdin\", read_only_sandbox = [\"--sandbox\", \"read-only\"] }\n").expect("inline");
        let tables = parse("[detect]\nversion = [\"-V\"]\nhelp = [[\"help\"], [\"exec\", \"--help\"]]\ntimeout_ms = 500\n[invoke]\nprompt = \"stdin\"\nread_only_sandbox = [\"--sandbox\", \"read-only\"]\n").expect("tables");
        assert_eq!(inline.detect, tables.detect);
        assert_eq!(inline.invoke, tables.invoke);
        assert_eq!(
            inline.fragment("read_only_sandbox"),
            Some(&["--sandbox".to_string(), "read-only".to_string()][..])
        );
        assert_eq!(inline.detect.help.len(), 2);
    }

    #[test]
    fn bad_values_are_schema_errors_naming_the_key() {
        for (extra, key) in [
            ("detect = { timeout_ms = 5 }\n", "detect.timeout_ms"),
            ("detect = { help = [\"--help\"] }\n", "detect.help"),
            ("invoke = { prompt = \"pipe\" }\n", "invoke.prompt"),
            ("invoke = { mcp = \"--mcp\" }\n", "invoke.mcp"),
            ("env_passthrough = [1]\n", "env_passthrough"),
            (
                "mcp_config = { file = \"f\", format = \"yaml\", key = \"k\", env = \"names\" }\n",
                "mcp_config.format",
            ),
            (
                "mcp_config = { file = \"f\", format = \"json\", key = \"k\", env = \"$X\" }\n",
                "mcp_config.env",
            ),
        ] {
            let e = parse(extra).expect_err(extra);
            assert!(e.detail.contains(key), "{extra}: {e}");
        }
    }
}
