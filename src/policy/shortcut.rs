//! Shortcut templates (docs/FORMAT.md §8) and POSIX single-quoting.
//!
//! A template is shell text with `{{param}}` placeholders and `[[ … ]]` optional groups. A
//! parameter value never becomes shell text: each placeholder is replaced by a reference to
//! the environment variable `DACLI_P_<param>` (`"${DACLI_P_param}"` outside quotes,
//! `${DACLI_P_param}` inside double quotes, unquoted `${DACLI_P_param}` for a `raw`
//! parameter, which the shell then splits into words), and the value travels in that
//! variable. The shell expands a variable once and never reads its value as code, so the value
//! arrives as data wherever the shell itself puts it.
//!
//! What the shell cannot protect is a place where the expanded value is handed to something
//! that reads it as code or as the program to run. [`Template::parse`] therefore reads the
//! template as the shell would (quotes, command substitutions, here-documents, simple
//! commands and their words) and refuses any placeholder it cannot prove to be plain data:
//! inside single quotes, `$'…'`, backticks, `$( )`, `$(( ))`, `${ }` or a here-document; right
//! after `\` or `$`; in a variable assignment; as the program name; in the code argument (or
//! before it, where it could pose as an option) of an interpreter such as `sh -c`, `eval`,
//! `python -c`, `perl -e`, `awk`, `sed`, `ssh` or `git -c`. Every way of keeping or dropping
//! the optional groups is checked. A group is dropped whole when any placeholder inside it is
//! empty, and otherwise kept without its brackets; groups do not nest. Validation happens when
//! a shortcut is created, and again before each run, so a stored template that fails is
//! reported, never run.

use std::collections::BTreeMap;

use crate::model::shortcut::{Param, is_param_name};

/// How many shortcuts a catalogue shows before announcing the rest: `run --list` and the
/// brief's shortcut section share it (COMMANDS.md §14.18).
pub const CATALOG_LIMIT: usize = 12;

/// The prefix of the environment variable that carries a parameter's value.
pub const PARAM_VAR_PREFIX: &str = "DACLI_P_";

/// The variable that carries parameter `name`.
pub fn param_var(name: &str) -> String {
    format!("{PARAM_VAR_PREFIX}{name}")
}

/// How many optional groups a template may have: every keep/drop combination is checked.
const MAX_GROUPS: usize = 8;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Placeholder(String),
    /// An optional group: text and placeholders, no nested group.
    Group(Vec<Piece>),
}

/// A template that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// Why a template or an expansion was rejected, in words fit for an error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// `{{` without its `}}`.
    UnclosedPlaceholder,
    /// `[[` without its `]]`.
    UnclosedGroup,
    /// `]]` with no open group.
    StrayGroupEnd,
    /// `[[` inside a group.
    NestedGroup,
    /// More optional groups than can be checked.
    TooManyGroups,
    /// `{{x}}` where `x` is not a parameter name.
    BadPlaceholder(String),
    /// `{{x}}` where `x` is not declared in `params`.
    Undeclared(String),
    /// A NUL byte in the template.
    Nul,
    /// A placeholder where its value could become code: the parameter and why.
    Unsafe { param: String, reason: String },
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateError::UnclosedPlaceholder => f.write_str("a `{{` is never closed by `}}`"),
            TemplateError::UnclosedGroup => f.write_str("a `[[` is never closed by `]]`"),
            TemplateError::StrayGroupEnd => f.write_str("a `]]` closes no `[[` group"),
            TemplateError::NestedGroup => f.write_str("optional groups `[[ … ]]` do not nest"),
            TemplateError::TooManyGroups => write!(
                f,
                "a template has at most {MAX_GROUPS} optional groups `[[ … ]]`"
            ),
            TemplateError::BadPlaceholder(p) => write!(
                f,
                "`{{{{{p}}}}}` is not a placeholder: names match [a-z][a-z0-9_]{{0,31}}"
            ),
            TemplateError::Undeclared(p) => write!(
                f,
                "the template uses `{{{{{p}}}}}` but declares no parameter `{p}` (add `--param {p}`)"
            ),
            TemplateError::Nul => f.write_str("the template contains a NUL byte"),
            TemplateError::Unsafe { param, reason } => write!(
                f,
                "`{{{{{param}}}}}` is {reason}, where its value could run as code; a placeholder may stand only where the shell passes its value on as data (a word or part of one, outside quotes or inside double quotes)"
            ),
        }
    }
}

/// A template with values put in: the command `sh -c` runs, and the variables that carry the
/// values (set on the shell's environment, never spliced into the command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub command: String,
    /// `(DACLI_P_<name>, value)` for every declared parameter, in declaration order.
    pub env: Vec<(String, String)>,
}

impl Expansion {
    /// The expansion as one command line a POSIX shell runs the same way:
    /// `env DACLI_P_x='…' sh -c '…'` (without parameters: the command itself).
    pub fn display(&self) -> String {
        if self.env.is_empty() {
            return self.command.clone();
        }
        let mut out = String::from("env");
        for (k, v) in &self.env {
            out.push(' ');
            out.push_str(k);
            out.push('=');
            out.push_str(&quote(v));
        }
        out.push_str(" sh -c ");
        out.push_str(&quote(&self.command));
        out
    }
}

impl Template {
    /// Parses `text`, checking that every placeholder names one of `declared` and stands
    /// where its value is data, whichever optional groups are kept.
    pub fn parse(text: &str, declared: &[&str]) -> Result<Template, TemplateError> {
        let template = Template::parse_syntax(text, declared)?;
        let groups = template
            .pieces
            .iter()
            .filter(|p| matches!(p, Piece::Group(_)))
            .count();
        if groups > MAX_GROUPS {
            return Err(TemplateError::TooManyGroups);
        }
        for mask in 0u32..(1 << groups) {
            let segs = template.layout(&|g, _| mask & (1 << g) != 0);
            if let Err((param, reason)) = shell::check(&segs) {
                return Err(TemplateError::Unsafe { param, reason });
            }
        }
        Ok(template)
    }

    fn parse_syntax(text: &str, declared: &[&str]) -> Result<Template, TemplateError> {
        if text.contains('\0') {
            return Err(TemplateError::Nul);
        }
        let mut top: Vec<Piece> = Vec::new();
        let mut group: Option<Vec<Piece>> = None;
        let mut literal = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = ["{{", "[[", "]]"]
                .iter()
                .filter_map(|m| rest.find(m).map(|i| (i, *m)))
                .min();
            let Some((at, marker)) = next else {
                literal.push_str(rest);
                break;
            };
            literal.push_str(&rest[..at]);
            rest = &rest[at + 2..];
            let pieces = group.as_mut().unwrap_or(&mut top);
            flush(&mut literal, pieces);
            match marker {
                "{{" => {
                    let end = rest.find("}}").ok_or(TemplateError::UnclosedPlaceholder)?;
                    let name = rest[..end].trim();
                    if !is_param_name(name) {
                        return Err(TemplateError::BadPlaceholder(rest[..end].to_string()));
                    }
                    if !declared.contains(&name) {
                        return Err(TemplateError::Undeclared(name.to_string()));
                    }
                    pieces.push(Piece::Placeholder(name.to_string()));
                    rest = &rest[end + 2..];
                }
                "[[" => {
                    if group.is_some() {
                        return Err(TemplateError::NestedGroup);
                    }
                    group = Some(Vec::new());
                }
                _ => {
                    let inner = group.take().ok_or(TemplateError::StrayGroupEnd)?;
                    top.push(Piece::Group(inner));
                }
            }
        }
        if group.is_some() {
            return Err(TemplateError::UnclosedGroup);
        }
        flush(&mut literal, &mut top);
        Ok(Template { pieces: top })
    }

    /// The placeholder names the template uses, in order of first use.
    pub fn placeholders(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.pieces {
            let inner = match p {
                Piece::Group(inner) => inner.as_slice(),
                other => std::slice::from_ref(other),
            };
            for q in inner {
                if let Piece::Placeholder(n) = q
                    && !out.contains(&n.as_str())
                {
                    out.push(n);
                }
            }
        }
        out
    }

    /// The template with each group kept or dropped as `keep(index, group)` says: text and
    /// placeholders in order.
    fn layout(&self, keep: &dyn Fn(usize, &[Piece]) -> bool) -> Vec<Seg> {
        let mut out: Vec<Seg> = Vec::new();
        let push_text = |out: &mut Vec<Seg>, t: &str| {
            if let Some(Seg::Text(last)) = out.last_mut() {
                last.push_str(t);
            } else if !t.is_empty() {
                out.push(Seg::Text(t.to_string()));
            }
        };
        let mut group_index = 0;
        for (i, piece) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Text(t) => push_text(&mut out, t),
                Piece::Placeholder(n) => out.push(Seg::Param(n.clone())),
                Piece::Group(inner) => {
                    let g = group_index;
                    group_index += 1;
                    if !keep(g, inner) {
                        // The group goes with one of the spaces around it, so
                        // `x [[ --f {{f}} ]] y` reads `x y` and a trailing group leaves no
                        // trailing space.
                        let after_space = match self.pieces.get(i + 1) {
                            Some(Piece::Text(t)) => t.starts_with(' '),
                            Some(_) => false,
                            None => true,
                        };
                        if after_space
                            && let Some(Seg::Text(last)) = out.last_mut()
                            && last.ends_with(' ')
                        {
                            last.pop();
                        }
                        continue;
                    }
                    // The spaces just inside `[[ ` and ` ]]` belong to the brackets.
                    let last = inner.len().saturating_sub(1);
                    for (j, p) in inner.iter().enumerate() {
                        match p {
                            Piece::Placeholder(n) => out.push(Seg::Param(n.clone())),
                            Piece::Text(t) => {
                                let t = if j == 0 { t.trim_start_matches(' ') } else { t };
                                let t = if j == last {
                                    t.trim_end_matches(' ')
                                } else {
                                    t
                                };
                                push_text(&mut out, t);
                            }
                            Piece::Group(_) => {}
                        }
                    }
                }
            }
        }
        out
    }

    /// Expands the template: each placeholder takes the call-site value, else the parameter's
    /// default, else empty. The command refers to the values through `DACLI_P_<name>`; the
    /// values themselves are in [`Expansion::env`].
    pub fn expand(
        &self,
        params: &[Param],
        values: &BTreeMap<String, String>,
    ) -> Result<Expansion, ExpandError> {
        for key in values.keys() {
            if !params.iter().any(|p| &p.name == key) {
                return Err(ExpandError::Unknown(key.clone()));
            }
        }
        let mut resolved: BTreeMap<&str, (&str, bool)> = BTreeMap::new();
        let mut env = Vec::new();
        for p in params {
            let value = values
                .get(&p.name)
                .map(String::as_str)
                .or(p.default.as_deref())
                .unwrap_or("");
            if value.contains('\0') {
                return Err(ExpandError::Nul(p.name.clone()));
            }
            if p.required && value.is_empty() {
                return Err(ExpandError::Missing(p.name.clone()));
            }
            resolved.insert(&p.name, (value, p.raw));
            env.push((param_var(&p.name), value.to_string()));
        }
        let segs = self.layout(&|_, inner| {
            !inner.iter().any(|p| match p {
                Piece::Placeholder(n) => resolved.get(n.as_str()).is_none_or(|v| v.0.is_empty()),
                _ => false,
            })
        });
        let raw = |name: &str| resolved.get(name).is_some_and(|v| v.1);
        // A value is data to the shell, but a program reads a leading `-` as an option
        // (`git log --output=FILE`, `tar --checkpoint-action=exec=…`): such a value is
        // refused where no `--` ends the options before it.
        for name in shell::exposed(&segs) {
            if resolved
                .get(name.as_str())
                .is_some_and(|(v, raw)| !raw && v.starts_with('-'))
            {
                return Err(ExpandError::OptionLike(name));
            }
        }
        Ok(Expansion {
            command: shell::render(&segs, &raw),
            env,
        })
    }
}

/// A template laid out with its groups decided: literal text and placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Text(String),
    Param(String),
}

/// Reading a template as `sh` reads it, far enough to know where each placeholder stands.
mod shell {
    use super::{Seg, param_var};

    /// Why a placeholder was refused: the parameter and the place, in words.
    pub(super) type Refused = (String, String);

    /// Where an accepted placeholder stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum Place {
        /// Outside quotes.
        Bare,
        /// Inside top-level double quotes.
        Quoted,
        /// In a comment, where nothing runs.
        Comment,
    }

    /// The command text for `segs`: each placeholder becomes a reference to its variable.
    pub(super) fn render(segs: &[Seg], raw: &dyn Fn(&str) -> bool) -> String {
        let places = check(segs).unwrap_or_default();
        let mut out = String::new();
        let mut n = 0;
        for seg in segs {
            match seg {
                Seg::Text(t) => out.push_str(t),
                Seg::Param(name) => {
                    let var = param_var(name);
                    match places.get(n).copied().unwrap_or(Place::Bare) {
                        Place::Quoted => out.push_str(&format!("${{{var}}}")),
                        Place::Bare if raw(name) => out.push_str(&format!("${{{var}}}")),
                        Place::Bare | Place::Comment => out.push_str(&format!("\"${{{var}}}\"")),
                    }
                    n += 1;
                }
            }
        }
        out
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Dq,
        Sq,
        DollarSq,
        Back,
        /// `$( … )` (or a `( … )` inside one), with the depth of nested parentheses.
        Sub(u32),
        /// `$(( … ))` or `(( … ))`.
        Arith(u32),
        /// `${ … }`.
        Param(u32),
    }

    impl Mode {
        fn place(self) -> &'static str {
            match self {
                Mode::Dq => "inside double quotes",
                Mode::Sq => "inside single quotes",
                Mode::DollarSq => "inside `$'…'` quotes",
                Mode::Back => "inside backticks",
                Mode::Sub(_) => "inside a command substitution `$( … )`",
                Mode::Arith(_) => "inside arithmetic `$(( … ))`",
                Mode::Param(_) => "inside a parameter expansion `${ … }`",
            }
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Tok<'a> {
        Ch(char),
        Param(&'a str),
    }

    /// One word of a simple command at the top level.
    #[derive(Debug, Default)]
    pub(super) struct Word {
        /// The word's characters with quotes removed (placeholders left out).
        pub(super) text: String,
        pub(super) params: Vec<String>,
        /// The target of a redirection (a file name: data).
        pub(super) redirect: bool,
        /// The delimiter of a here-document.
        heredoc: bool,
        /// A placeholder starts the word, so its value could begin with `-` and pose as an
        /// option.
        pub(super) leads: bool,
    }

    struct Lexer<'a> {
        toks: Vec<Tok<'a>>,
        i: usize,
        stack: Vec<Mode>,
        word: Option<Word>,
        words: Vec<Word>,
        next_redirect: bool,
        next_heredoc: bool,
        heredocs: Vec<String>,
        places: Vec<Place>,
        /// Placeholders where a value starting with `-` could be read as an option.
        exposed: Vec<String>,
        /// The first placeholder of the template, once met.
        tainted: Option<String>,
        /// The stage being read takes its input from a pipe out of a stage with a placeholder.
        piped_data: bool,
        /// The current stage has a placeholder (its output carries a value).
        stage_has_param: bool,
    }

    /// Where a value starting with `-` could be read as an option: parameter names.
    pub(super) fn exposed(segs: &[Seg]) -> Vec<String> {
        let mut lx = lexer(segs);
        match lx.run() {
            Ok(()) => lx.exposed,
            Err(_) => Vec::new(),
        }
    }

    /// Checks every placeholder of `segs`; on success, where each one stands, in order.
    pub(super) fn check(segs: &[Seg]) -> Result<Vec<Place>, Refused> {
        let mut lx = lexer(segs);
        lx.run()?;
        Ok(lx.places)
    }

    fn lexer(segs: &[Seg]) -> Lexer<'_> {
        let mut toks = Vec::new();
        for s in segs {
            match s {
                Seg::Text(t) => toks.extend(t.chars().map(Tok::Ch)),
                Seg::Param(p) => toks.push(Tok::Param(p)),
            }
        }
        Lexer {
            toks,
            i: 0,
            stack: Vec::new(),
            word: None,
            words: Vec::new(),
            next_redirect: false,
            next_heredoc: false,
            heredocs: Vec::new(),
            places: Vec::new(),
            exposed: Vec::new(),
            tainted: None,
            piped_data: false,
            stage_has_param: false,
        }
    }

    fn refused(param: &str, reason: impl Into<String>) -> Refused {
        (param.to_string(), reason.into())
    }

    impl<'a> Lexer<'a> {
        fn next(&mut self) -> Option<Tok<'a>> {
            let t = self.toks.get(self.i).copied();
            self.i += 1;
            t
        }

        fn peek(&self) -> Option<Tok<'a>> {
            self.toks.get(self.i).copied()
        }

        fn word(&mut self) -> &mut Word {
            let (redirect, heredoc) = (self.next_redirect, self.next_heredoc);
            self.word.get_or_insert_with(|| Word {
                redirect,
                heredoc,
                ..Word::default()
            })
        }

        fn push_char(&mut self, c: char) {
            self.word().text.push(c);
        }

        fn end_word(&mut self) -> Result<(), Refused> {
            if let Some(w) = self.word.take() {
                self.next_redirect = false;
                self.next_heredoc = false;
                if w.heredoc {
                    if let Some(p) = w.params.first() {
                        return Err(refused(p, "the delimiter of a here-document"));
                    }
                    self.heredocs.push(w.text);
                } else {
                    self.words.push(w);
                }
            }
            Ok(())
        }

        fn end_command(&mut self) -> Result<(), Refused> {
            self.end_command_then(false)
        }

        /// Ends the current command; `pipe` when a `|` (not `||`) follows it, so the next
        /// stage reads this one's output.
        fn end_command_then(&mut self, pipe: bool) -> Result<(), Refused> {
            self.end_word()?;
            let words = std::mem::take(&mut self.words);
            let seen = super::command::Seen {
                tainted: self.tainted.as_deref(),
                piped_data: self.piped_data,
            };
            let exposed = super::command::check(&words, seen)?;
            self.exposed.extend(exposed);
            let carries = self.piped_data || self.stage_has_param;
            self.piped_data = pipe && carries;
            self.stage_has_param = false;
            Ok(())
        }

        /// A placeholder met in the current context.
        fn param(&mut self, name: &str) -> Result<(), Refused> {
            let inner = self.stack.iter().find(|m| **m != Mode::Dq);
            if let Some(m) = inner {
                return Err(refused(name, m.place()));
            }
            if self.stack.len() > 1 {
                return Err(refused(name, "inside nested double quotes"));
            }
            self.places.push(if self.stack.is_empty() {
                Place::Bare
            } else {
                Place::Quoted
            });
            if self.tainted.is_none() {
                self.tainted = Some(name.to_string());
            }
            self.stage_has_param = true;
            let word = self.word();
            if word.text.is_empty() && word.params.is_empty() {
                word.leads = true;
            }
            word.params.push(name.to_string());
            Ok(())
        }

        /// Skips one escaped token; a placeholder cannot be escaped.
        fn escaped(&mut self, keep: bool) -> Result<(), Refused> {
            match self.next() {
                Some(Tok::Param(p)) => Err(refused(p, "right after a backslash")),
                Some(Tok::Ch('\n')) => Ok(()),
                Some(Tok::Ch(c)) => {
                    if keep {
                        self.push_char(c);
                    }
                    Ok(())
                }
                None => Ok(()),
            }
        }

        /// After a `$`: what it opens, if anything.
        fn dollar(&mut self, top: bool) -> Result<(), Refused> {
            match self.peek() {
                Some(Tok::Param(p)) => Err(refused(p, "right after `$`")),
                // bash's old arithmetic `$[ … ]` evaluates its text as code (array subscripts
                // run command substitutions); dash leaves it literal.
                Some(Tok::Ch('[')) => {
                    for t in &self.toks[self.i..] {
                        match t {
                            Tok::Ch(']') | Tok::Ch('\n') => break,
                            Tok::Param(p) => {
                                return Err(refused(p, "inside bash arithmetic `$[ … ]`"));
                            }
                            Tok::Ch(_) => {}
                        }
                    }
                    if self.stack.len() <= 1 {
                        self.push_char('$');
                    }
                    Ok(())
                }
                Some(Tok::Ch('(')) => {
                    self.i += 1;
                    if self.peek() == Some(Tok::Ch('(')) {
                        self.i += 1;
                        self.stack.push(Mode::Arith(0));
                    } else {
                        self.stack.push(Mode::Sub(0));
                    }
                    Ok(())
                }
                Some(Tok::Ch('{')) => {
                    self.i += 1;
                    self.stack.push(Mode::Param(0));
                    Ok(())
                }
                Some(Tok::Ch('\'')) if top => {
                    self.i += 1;
                    self.stack.push(Mode::DollarSq);
                    Ok(())
                }
                _ => {
                    if self.stack.len() <= 1 {
                        self.push_char('$');
                    }
                    Ok(())
                }
            }
        }

        fn run(&mut self) -> Result<(), Refused> {
            let mut comment = false;
            while let Some(t) = self.next() {
                if comment {
                    match t {
                        Tok::Ch('\n') => {
                            comment = false;
                            self.newline()?;
                        }
                        Tok::Param(_) => self.places.push(Place::Comment),
                        Tok::Ch(_) => {}
                    }
                    continue;
                }
                let c = match t {
                    Tok::Param(p) => {
                        self.param(p)?;
                        continue;
                    }
                    Tok::Ch(c) => c,
                };
                match self.stack.last().copied() {
                    None => match c {
                        ' ' | '\t' => self.end_word()?,
                        '\n' => self.newline()?,
                        '|' => {
                            let pipe = self.peek() != Some(Tok::Ch('|'));
                            if !pipe {
                                self.i += 1;
                            }
                            self.end_command_then(pipe)?;
                        }
                        ';' | '&' | ')' => self.end_command()?,
                        '(' => {
                            self.end_command()?;
                            if self.peek() == Some(Tok::Ch('(')) {
                                self.i += 1;
                                self.stack.push(Mode::Arith(0));
                            }
                        }
                        '<' | '>' => self.redirection(c)?,
                        '#' if self.word.is_none() => comment = true,
                        '\'' => {
                            self.word();
                            self.stack.push(Mode::Sq);
                        }
                        '"' => {
                            self.word();
                            self.stack.push(Mode::Dq);
                        }
                        '`' => {
                            self.word();
                            self.stack.push(Mode::Back);
                        }
                        '\\' => self.escaped(true)?,
                        '$' => {
                            self.word();
                            self.dollar(true)?;
                        }
                        c => self.push_char(c),
                    },
                    Some(Mode::Dq) => match c {
                        '"' => {
                            self.stack.pop();
                        }
                        '\\' => self.escaped(self.stack.len() == 1)?,
                        '$' => self.dollar(false)?,
                        '`' => self.stack.push(Mode::Back),
                        c => {
                            if self.stack.len() == 1 {
                                self.push_char(c);
                            }
                        }
                    },
                    Some(Mode::Sq) => match c {
                        '\'' => {
                            self.stack.pop();
                        }
                        c => {
                            if self.stack.len() == 1 {
                                self.push_char(c);
                            }
                        }
                    },
                    Some(Mode::DollarSq) => match c {
                        '\'' => {
                            self.stack.pop();
                        }
                        '\\' => self.skip_in_nested()?,
                        _ => {}
                    },
                    Some(Mode::Back) => match c {
                        '`' => {
                            self.stack.pop();
                        }
                        '\\' => self.skip_in_nested()?,
                        '"' => self.stack.push(Mode::Dq),
                        '\'' => self.stack.push(Mode::Sq),
                        '$' => self.dollar(false)?,
                        _ => {}
                    },
                    Some(Mode::Sub(d)) | Some(Mode::Arith(d)) => {
                        let arith = matches!(self.stack.last(), Some(Mode::Arith(_)));
                        let set = |d: u32| if arith { Mode::Arith(d) } else { Mode::Sub(d) };
                        match c {
                            '(' => {
                                self.stack.pop();
                                self.stack.push(set(d + 1));
                            }
                            ')' => {
                                self.stack.pop();
                                if d > 0 {
                                    self.stack.push(set(d - 1));
                                } else if arith && self.peek() == Some(Tok::Ch(')')) {
                                    self.i += 1;
                                }
                            }
                            '\\' => self.skip_in_nested()?,
                            '"' => self.stack.push(Mode::Dq),
                            '\'' => self.stack.push(Mode::Sq),
                            '`' => self.stack.push(Mode::Back),
                            '$' => self.dollar(false)?,
                            _ => {}
                        }
                    }
                    Some(Mode::Param(d)) => match c {
                        '{' => {
                            self.stack.pop();
                            self.stack.push(Mode::Param(d + 1));
                        }
                        '}' => {
                            self.stack.pop();
                            if d > 0 {
                                self.stack.push(Mode::Param(d - 1));
                            }
                        }
                        '\\' => self.skip_in_nested()?,
                        '"' => self.stack.push(Mode::Dq),
                        '\'' => self.stack.push(Mode::Sq),
                        '`' => self.stack.push(Mode::Back),
                        '$' => self.dollar(false)?,
                        _ => {}
                    },
                }
            }
            self.end_command()
        }

        /// A backslash inside a nested context: the next token is escaped, and a placeholder
        /// there is refused for the context it is in.
        fn skip_in_nested(&mut self) -> Result<(), Refused> {
            if let Some(Tok::Param(p)) = self.peek() {
                return self.param(p);
            }
            self.i += 1;
            Ok(())
        }

        /// A newline at the top level: ends the command, then reads pending here-documents.
        fn newline(&mut self) -> Result<(), Refused> {
            self.end_command()?;
            let pending = std::mem::take(&mut self.heredocs);
            for delim in pending {
                let mut line: Vec<Tok<'a>> = Vec::new();
                loop {
                    match self.next() {
                        None => return Ok(()),
                        Some(Tok::Param(p)) => {
                            return Err(refused(p, "inside a here-document"));
                        }
                        Some(Tok::Ch('\n')) => {
                            let text: String = line
                                .iter()
                                .filter_map(|t| match t {
                                    Tok::Ch(c) => Some(*c),
                                    Tok::Param(_) => None,
                                })
                                .collect();
                            line.clear();
                            if text.trim_start_matches('\t') == delim {
                                break;
                            }
                        }
                        Some(t) => line.push(t),
                    }
                }
            }
            Ok(())
        }

        /// `<`, `>` and their forms; the next word is a file (or a here-document delimiter).
        fn redirection(&mut self, first: char) -> Result<(), Refused> {
            // A word of digits right before is a file descriptor, not an argument.
            if self
                .word
                .as_ref()
                .is_some_and(|w| w.params.is_empty() && w.text.chars().all(|c| c.is_ascii_digit()))
            {
                self.word = None;
            }
            self.end_word()?;
            let mut heredoc = false;
            if first == '<' && self.peek() == Some(Tok::Ch('<')) {
                self.i += 1;
                if self.peek() == Some(Tok::Ch('<')) {
                    self.i += 1;
                } else {
                    heredoc = true;
                    if self.peek() == Some(Tok::Ch('-')) {
                        self.i += 1;
                    }
                }
            } else {
                while matches!(self.peek(), Some(Tok::Ch('>' | '&' | '|'))) {
                    self.i += 1;
                }
            }
            self.next_redirect = !heredoc;
            self.next_heredoc = heredoc;
            Ok(())
        }
    }
}

/// The words of one simple command: which of them the shell or the program it runs would
/// read as a program, an option or code.
mod command {
    use super::shell::Refused;

    /// How a program treats its arguments.
    #[derive(Debug, Clone, Copy)]
    struct Interp {
        /// Short-option letters that take code as the next argument (`sh -c`, `perl -e`);
        /// they also count inside a cluster (`-ec`).
        code_letters: &'static str,
        /// Long (or exact) options that take code as the next argument.
        code_options: &'static [&'static str],
        /// Options whose next argument is a plain value.
        value_options: &'static [&'static str],
        /// Options that supply the program, so no operand is one (`awk -f`).
        program_options: &'static [&'static str],
    }

    const SHELL: Interp = Interp {
        code_letters: "c",
        code_options: &["-c", "--command"],
        value_options: &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"],
        program_options: &[],
    };

    /// Programs that read an argument as code or as the program to run, and how.
    fn interpreter(name: &str) -> Option<Interp> {
        Some(match name {
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "posh" | "rbash"
            | "fish" | "csh" | "tcsh" | "busybox" => SHELL,
            "python" | "python2" | "python3" | "pypy" | "pypy3" => Interp {
                code_letters: "c",
                code_options: &["-c"],
                value_options: &["-W", "-X", "-Q"],
                program_options: &[],
            },
            "perl" => Interp {
                code_letters: "eE",
                code_options: &["-e", "-E"],
                value_options: &["-I", "-M", "-m"],
                program_options: &[],
            },
            "ruby" | "lua" | "luajit" | "Rscript" | "osascript" | "tclsh" | "wish" | "jshell" => {
                Interp {
                    code_letters: "e",
                    code_options: &["-e"],
                    value_options: &["-I", "-r"],
                    program_options: &[],
                }
            }
            "node" | "nodejs" | "bun" | "deno" => Interp {
                code_letters: "ep",
                code_options: &["-e", "-p", "--eval", "--print"],
                value_options: &["-r", "--require", "--import"],
                program_options: &[],
            },
            "php" => Interp {
                code_letters: "rBRE",
                code_options: &["-r", "-B", "-R", "-E"],
                value_options: &["-d", "-c"],
                program_options: &[],
            },
            "pwsh" | "powershell" => Interp {
                code_letters: "c",
                code_options: &["-c", "-Command", "-EncodedCommand", "-e"],
                value_options: &[],
                program_options: &[],
            },
            "awk" | "gawk" | "mawk" | "nawk" => Interp {
                code_letters: "",
                code_options: &["-e", "--source"],
                value_options: &["-v", "-F"],
                program_options: &["-f", "--file", "-e", "--source"],
            },
            "sed" | "gsed" => Interp {
                code_letters: "e",
                code_options: &["-e", "--expression"],
                value_options: &["-l"],
                program_options: &["-f", "--file", "-e", "--expression"],
            },
            // `git -c core.pager=…` sets a command; the first operand names a subcommand,
            // which an alias can make a shell command.
            "git" => Interp {
                code_letters: "",
                code_options: &["-c", "--config-env"],
                value_options: &["-C", "--git-dir", "--work-tree", "--namespace"],
                program_options: &[],
            },
            _ => return None,
        })
    }

    /// Programs whose every argument is code, a program to run, or a variable name.
    fn all_code(name: &str) -> Option<&'static str> {
        Some(match name {
            "eval" | "source" | "." | "trap" | "alias" => "runs its arguments as shell code",
            "let" => "evaluates its arguments as arithmetic",
            "export" | "declare" | "typeset" | "local" | "readonly" | "read" | "unset"
            | "mapfile" | "readarray" | "getopts" => "takes variable names",
            "ssh" | "su" | "runuser" | "script" | "watch" | "flock" | "gdb" => {
                "runs a command built from its arguments"
            }
            _ => return None,
        })
    }

    /// Programs that run the command given after their own options.
    fn wrapper(name: &str) -> bool {
        matches!(
            name,
            "exec"
                | "coproc"
                | "command"
                | "builtin"
                | "nohup"
                | "nice"
                | "time"
                | "env"
                | "sudo"
                | "doas"
                | "timeout"
                | "stdbuf"
                | "setsid"
                | "ionice"
                | "chrt"
                | "taskset"
                | "xargs"
                | "unbuffer"
                | "caffeinate"
                | "strace"
                | "ltrace"
                | "valgrind"
                | "chroot"
                | "nsenter"
                | "firejail"
                | "systemd-run"
                | "torsocks"
                | "proxychains"
                | "parallel"
        )
    }

    /// Words that run what follows them (`find -exec`).
    fn runs_next(word: &str) -> bool {
        matches!(word, "-exec" | "-execdir" | "-ok" | "-okdir")
    }

    const RESERVED: &[&str] = &[
        "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "in",
        "esac",
    ];

    fn basename(word: &str) -> &str {
        word.rsplit('/').next().unwrap_or(word)
    }

    fn is_assignment(text: &str) -> bool {
        let Some((name, _)) = text.split_once('=') else {
            return false;
        };
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    /// What the scan expects of the next word.
    #[derive(Debug, Clone, Copy)]
    enum State {
        /// The program to run (after any assignments).
        Program,
        /// The program, after a wrapper's options.
        Wrapped,
        /// Arguments that are data (but a known program among them is looked at again).
        Args,
        /// Arguments of `for` and `case`: data.
        Loop,
        /// Every argument is code.
        AllCode(&'static str, usize),
        /// Options of an interpreter, before its program or code.
        Interp {
            i: Interp,
            at: usize,
            value_next: bool,
        },
        /// The code argument of an interpreter (the program, the option word).
        Code(Interp, usize, usize),
    }

    /// What the template showed before this command.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Seen<'a> {
        /// The template's first placeholder, if one came before or in this command.
        pub(super) tainted: Option<&'a str>,
        /// This command reads, through a pipe, output that carries a value.
        pub(super) piped_data: bool,
    }

    /// Checks one simple command; on success, the placeholders that start a word where a
    /// value beginning with `-` could be read as an option (no `--` before them).
    pub(super) fn check(
        words: &[super::shell::Word],
        seen: Seen<'_>,
    ) -> Result<Vec<String>, Refused> {
        let mut state = State::Program;
        let mut program: Option<&str> = None;
        let mut options_ended = false;
        let mut exposed = Vec::new();
        let first_param = words.iter().find_map(|w| w.params.first().cloned());
        let tainted = seen.tainted.map(str::to_string).or(first_param);
        for (n, w) in words.iter().enumerate() {
            if w.redirect {
                continue;
            }
            let param = w.params.first();
            let refuse =
                |reason: String| -> Refused { (param.cloned().unwrap_or_default(), reason) };
            let name = basename(&w.text);
            if param.is_none() && w.text == "--" {
                options_ended = true;
            }
            if let Some(p) = param
                && w.leads
                && !options_ended
                && n > 0
                && !exposed.contains(p)
            {
                exposed.push(p.clone());
            }
            if let (Some(_), Some(prog)) = (param, program)
                && n > 0
                && matches!(words[n - 1].text.as_str(), "-v" | "-R")
                && words[n - 1].params.is_empty()
                && matches!(prog, "printf" | "test" | "[")
            {
                return Err(refuse(format!(
                    "the variable name after `{prog} {}`, whose subscript bash evaluates as code",
                    words[n - 1].text
                )));
            }
            state = match state {
                State::Program | State::Wrapped => {
                    let wrapped = matches!(state, State::Wrapped);
                    if param.is_none()
                        && w.text.contains('$')
                        && let Some(t) = &tainted
                    {
                        return Err((
                            t.clone(),
                            format!(
                                "in a template whose program `{}` is an expansion, which could hold a value",
                                w.text
                            ),
                        ));
                    }
                    if !is_assignment(&w.text)
                        && param.is_none()
                        && seen.piped_data
                        && !(wrapped
                            && (w.text.starts_with('-')
                                || w.text.starts_with(|c: char| c.is_ascii_digit())))
                        && reads_code_from_input(name, &words[n + 1..])
                    {
                        return Err((
                            tainted.clone().unwrap_or_default(),
                            format!(
                                "piped into `{name}`, which runs its input as code or commands"
                            ),
                        ));
                    }
                    if !is_assignment(&w.text) && param.is_none() {
                        program = Some(name);
                        options_ended = false;
                    }
                    if is_assignment(&w.text) {
                        if param.is_some() {
                            return Err(refuse(
                                "in a variable assignment (it could set PATH, LD_PRELOAD or BASH_ENV)"
                                    .into(),
                            ));
                        }
                        state
                    } else if wrapped
                        && (w.text.starts_with('-')
                            || w.text.starts_with(|c: char| c.is_ascii_digit()))
                        && param.is_none()
                    {
                        State::Wrapped
                    } else if param.is_some() {
                        return Err(refuse(if wrapped {
                            "an option or the program of a command that runs another".into()
                        } else {
                            "the program to run".into()
                        }));
                    } else {
                        classify(name, n)
                    }
                }
                State::Args => match param {
                    Some(_) => State::Args,
                    None if runs_next(&w.text) => State::Program,
                    None => match classify(name, n) {
                        found @ (State::Wrapped | State::AllCode(..) | State::Interp { .. }) => {
                            program = Some(name);
                            found
                        }
                        _ => State::Args,
                    },
                },
                State::Loop => State::Loop,
                State::AllCode(why, at) => {
                    if param.is_some() {
                        return Err(refuse(format!(
                            "an argument of `{}`, which {why}",
                            basename(&words[at].text)
                        )));
                    }
                    state
                }
                State::Code(i, at, flag) => {
                    if param.is_some() {
                        return Err(refuse(format!(
                            "in the code (or program file) of `{} {}`",
                            basename(&words[at].text),
                            words[flag].text
                        )));
                    }
                    // More options may follow; the first operand after them (`sh -c CODE
                    // NAME …`) starts the data.
                    State::Interp {
                        i,
                        at,
                        value_next: false,
                    }
                }
                State::Interp { i, at, value_next } => {
                    let prog = basename(&words[at].text);
                    if value_next {
                        State::Interp {
                            i,
                            at,
                            value_next: false,
                        }
                    } else if param.is_none() && w.text == "--" {
                        State::Args
                    } else if param.is_some() {
                        return Err(refuse(format!(
                            "before the program or code of `{prog}`, where it could be read as an option, a program or code"
                        )));
                    } else if i.code_options.contains(&w.text.as_str())
                        || (!i.code_letters.is_empty()
                            && w.text.starts_with('-')
                            && !w.text.starts_with("--")
                            && w.text.len() > 1
                            && w.text[1..].chars().all(|c| c.is_ascii_alphabetic())
                            && w.text.chars().any(|c| i.code_letters.contains(c)))
                    {
                        State::Code(i, at, n)
                    } else if i.program_options.contains(&w.text.as_str()) {
                        // The program comes from this option's argument.
                        State::Code(i, at, n)
                    } else if i.value_options.contains(&w.text.as_str()) {
                        State::Interp {
                            i,
                            at,
                            value_next: true,
                        }
                    } else if w.text.starts_with('-') || w.text.starts_with('+') {
                        state
                    } else {
                        // The first operand: the program file, or the code (awk, sed).
                        State::Args
                    }
                }
            };
        }
        Ok(exposed)
    }

    /// Whether `name`, given the words after it, runs what it reads on standard input: a
    /// shell or interpreter with no program or code operand (`| sh`, `| python3 -`), `eval`
    /// and the like, or `xargs`/`parallel`, which make commands of their input.
    fn reads_code_from_input(name: &str, rest: &[super::shell::Word]) -> bool {
        if matches!(name, "xargs" | "parallel") || all_code(name).is_some() {
            return true;
        }
        if interpreter(name).is_none() || name == "git" {
            return false;
        }
        rest.iter()
            .filter(|w| !w.redirect)
            .all(|w| w.params.is_empty() && (w.text.starts_with('-') || w.text.starts_with('+')))
    }

    /// The state after the program word `name` (at index `n`).
    fn classify(name: &str, n: usize) -> State {
        if RESERVED.contains(&name) {
            return State::Program;
        }
        if matches!(name, "for" | "case" | "select") {
            return State::Loop;
        }
        if wrapper(name) {
            return State::Wrapped;
        }
        if let Some(why) = all_code(name) {
            return State::AllCode(why, n);
        }
        if let Some(i) = interpreter(name) {
            return State::Interp {
                i,
                at: n,
                value_next: false,
            };
        }
        State::Args
    }
}

/// Why values could not be put into a template (exit 2, naming the parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// `--param k=v` for a parameter the shortcut does not declare.
    Unknown(String),
    /// A required parameter without a value.
    Missing(String),
    /// A value containing NUL, which no shell word can carry.
    Nul(String),
    /// A value starting with `-` where the program could read it as an option.
    OptionLike(String),
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unknown(k) => write!(f, "the shortcut has no parameter `{k}`"),
            ExpandError::Missing(k) => {
                write!(f, "parameter `{k}` is required: pass `--param {k}=VALUE`")
            }
            ExpandError::Nul(k) => write!(f, "the value of `{k}` contains a NUL byte"),
            ExpandError::OptionLike(k) => write!(
                f,
                "the value of `{k}` starts with `-`, and the template puts it where the program could read it as an option: pass a value that does not start with `-` (e.g. `./-name`), or have the shortcut's author put `--` before `{{{{{k}}}}}`"
            ),
        }
    }
}

fn flush(literal: &mut String, pieces: &mut Vec<Piece>) {
    if !literal.is_empty() {
        pieces.push(Piece::Text(std::mem::take(literal)));
    }
}

/// POSIX single-quoting: `s` as exactly one shell word that every POSIX shell reads back as
/// the same bytes. Each `'` becomes `'\''` (close, escaped quote, reopen).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// The parameter list as `run --list` shows it: `name` when required, `name?` otherwise.
pub fn param_signature(params: &[Param]) -> Vec<String> {
    params
        .iter()
        .map(|p| {
            if p.required {
                p.name.clone()
            } else {
                format!("{}?", p.name)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str) -> Param {
        Param {
            name: name.into(),
            required: false,
            raw: false,
            default: None,
            description: None,
        }
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn validation_names_what_is_wrong() {
        let p = ["f"];
        assert_eq!(
            Template::parse("x {{g}}", &p),
            Err(TemplateError::Undeclared("g".into()))
        );
        assert_eq!(
            Template::parse("x {{f", &p),
            Err(TemplateError::UnclosedPlaceholder)
        );
        assert_eq!(
            Template::parse("x [[ {{f}}", &p),
            Err(TemplateError::UnclosedGroup)
        );
        assert_eq!(
            Template::parse("x [[ [[ {{f}} ]] ]]", &p),
            Err(TemplateError::NestedGroup)
        );
        assert_eq!(
            Template::parse("x ]]", &p),
            Err(TemplateError::StrayGroupEnd)
        );
        assert_eq!(
            Template::parse("x {{F}}", &p),
            Err(TemplateError::BadPlaceholder("F".into()))
        );
        assert_eq!(Template::parse("x\0", &p), Err(TemplateError::Nul));
        assert!(Template::parse("jq '{a:{b:1}}'", &[]).is_ok());
    }

    fn cmd(t: &Template, params: &[Param], pairs: &[(&str, &str)]) -> String {
        t.expand(params, &values(pairs)).expect("expands").command
    }

    #[test]
    fn optional_groups_drop_when_empty() {
        let t = Template::parse(
            "./scripts/test.sh checkout [[ --filter {{filter}} ]]",
            &["filter"],
        )
        .expect("valid");
        let params = [param("filter")];
        assert_eq!(cmd(&t, &params, &[]), "./scripts/test.sh checkout");
        let e = t
            .expand(&params, &values(&[("filter", "rounding")]))
            .expect("expands");
        assert_eq!(
            e.command,
            "./scripts/test.sh checkout --filter \"${DACLI_P_filter}\""
        );
        assert_eq!(
            e.env,
            vec![("DACLI_P_filter".to_string(), "rounding".to_string())]
        );
        assert_eq!(
            e.display(),
            "env DACLI_P_filter='rounding' sh -c './scripts/test.sh checkout --filter \"${DACLI_P_filter}\"'"
        );
        assert_eq!(t.placeholders(), vec!["filter"]);
        let mid = Template::parse("x [[ --f {{f}} ]] y", &["f"]).expect("valid");
        assert_eq!(cmd(&mid, &[param("f")], &[]), "x y");
        assert_eq!(
            cmd(&mid, &[param("f")], &[("f", "a  b")]),
            "x --f \"${DACLI_P_f}\" y"
        );
    }

    #[test]
    fn values_are_references_never_text() {
        let t = Template::parse("echo {{a}} \"msg: {{b}}\" x{{a}}y", &["a", "b"]).expect("valid");
        let mut b = param("b");
        b.raw = true;
        let params = [param("a"), b];
        let e = t
            .expand(&params, &values(&[("a", "it's $(x)"), ("b", "$HOME")]))
            .expect("expands");
        assert_eq!(
            e.command,
            "echo \"${DACLI_P_a}\" \"msg: ${DACLI_P_b}\" x\"${DACLI_P_a}\"y"
        );
        assert!(!e.command.contains("$(x)"));
        let raw = Template::parse("ls {{b}}", &["b"]).expect("valid");
        assert_eq!(cmd(&raw, &params, &[]), "ls ${DACLI_P_b}");
    }

    fn refusal(text: &str) -> String {
        match Template::parse(text, &["a", "b"]) {
            Err(TemplateError::Unsafe { reason, .. }) => reason,
            other => panic!("{text}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn unsafe_places_are_refused() {
        for (text, why) in [
            ("echo '{{a}}'", "single quotes"),
            ("sh -c \"echo {{a}}\"", "code"),
            ("sh -c 'echo {{a}}'", "single quotes"),
            ("bash -ec \"{{a}}\"", "code"),
            ("bash -o pipefail -c \"x {{a}}\"", "code"),
            ("sudo -u root sh -c \"{{a}}\"", "code"),
            ("find . -exec sh -c {{a}} \\;", "code"),
            ("timeout 5 bash -c {{a}}", "code"),
            ("echo `echo {{a}}`", "backticks"),
            ("echo $(echo {{a}})", "command substitution"),
            ("echo \"$(echo {{a}})\"", "command substitution"),
            ("echo $(( {{a}} + 1 ))", "arithmetic"),
            ("(( {{a}} ))", "arithmetic"),
            ("echo ${x:-{{a}}}", "parameter expansion"),
            ("echo $'{{a}}'", "$'"),
            ("cat <<EOF\n{{a}}\nEOF", "here-document"),
            ("cat <<{{a}}\nx\n", "here-document"),
            ("echo \\{{a}}", "backslash"),
            ("echo ${{a}}", "after `$`"),
            ("{{a}} --version", "program"),
            ("env {{a}}", "program"),
            ("X={{a}} ./run", "assignment"),
            ("env LD_PRELOAD={{a}} ./run", "assignment"),
            ("eval {{a}}", "eval"),
            ("eval \"x {{a}}\"", "eval"),
            (". {{a}}", "shell code"),
            ("export X={{a}}", "variable names"),
            ("read {{a}}", "variable names"),
            ("ssh host ls {{a}}", "ssh"),
            ("echo \"{{a}}\" | sh", "piped into `sh`"),
            ("printf %s {{a}} | bash", "piped into `bash`"),
            ("echo {{a}} | tr a b | python3 -", "piped into `python3`"),
            ("echo {{a}} | xargs rm", "piped into `xargs`"),
            ("for x in {{a}}; do $x; done", "is an expansion"),
            ("printf -v {{a}} x", "printf -v"),
            ("test -v {{a}}", "test -v"),
            ("[ -v {{a}} ]", "[ -v"),
            ("echo $[ {{a}} ]", "bash arithmetic"),
            ("coproc {{a}}", "program"),
            ("watch ls {{a}}", "watch"),
            ("python3 -c \"print({{a}})\"", "code"),
            ("python3 {{a}}", "option"),
            ("perl -ne {{a}}", "code"),
            ("node -e {{a}}", "code"),
            ("awk {{a}} file", "option"),
            ("sed -e {{a}}", "code"),
            ("git -c {{a}} status", "code"),
            ("git {{a}}", "option"),
            ("bash {{a}}", "option"),
            ("x [[ sh -c ]] \"{{a}}\"", "code"),
        ] {
            let reason = refusal(text);
            assert!(reason.contains(why), "{text}: {reason}");
        }
    }

    #[test]
    fn data_places_are_accepted() {
        for text in [
            "echo {{a}}",
            "echo \"msg: {{a}}\"",
            "echo --filter={{a}} x{{a}}y",
            "printf '%s\\n' {{a}} > out.txt",
            "printf x >> {{a}}",
            "./scripts/test.sh checkout [[ --filter {{a}} ]]",
            "sh -c 'echo \"$1\"' sh {{a}}",
            "bash ./scripts/test.sh {{a}}",
            "python3 -m pytest -k {{a}}",
            "git log --oneline -- {{a}}",
            "git -C sub log -- {{a}}",
            "awk '{print}' {{a}}",
            "sed -e 's/x/y/' -- {{a}}",
            "cargo test {{a}} && echo done {{b}}",
            "for f in {{a}}; do echo \"$f\"; done",
            "echo {{a}} | sed s/a/b/",
            "echo {{a}} || sh ./fallback.sh",
            "echo {{a}}; echo done | sh",
            "grep -v {{a}} README",
            "case {{a}} in x) echo {{b}};; esac",
            "echo hi # {{a}}",
            "timeout 10 ./run {{a}}",
            "cat <<'EOF'\nbody\nEOF\necho {{a}}",
            "jq '{a:{b:1}}' {{a}}",
        ] {
            assert!(
                Template::parse(text, &["a", "b"]).is_ok(),
                "{text}: {:?}",
                Template::parse(text, &["a", "b"])
            );
        }
    }

    #[test]
    fn parameters_are_checked_at_the_call() {
        let t = Template::parse("x {{a}}", &["a"]).expect("valid");
        let mut a = param("a");
        a.required = true;
        let params = [a.clone()];
        assert_eq!(
            t.expand(&params, &values(&[])),
            Err(ExpandError::Missing("a".into()))
        );
        assert_eq!(
            t.expand(&params, &values(&[("z", "1"), ("a", "1")])),
            Err(ExpandError::Unknown("z".into()))
        );
        assert_eq!(
            t.expand(&params, &values(&[("a", "a\0b")])),
            Err(ExpandError::Nul("a".into()))
        );
        assert_eq!(
            t.expand(&params, &values(&[("a", "--output=f")])),
            Err(ExpandError::OptionLike("a".into()))
        );
        // After `--`, inside a word, or for a raw parameter, a leading `-` is what was meant.
        for text in ["x -- {{a}}", "x --f={{a}}", "echo \"m {{a}}\""] {
            let t = Template::parse(text, &["a"]).expect("valid");
            assert!(t.expand(&params, &values(&[("a", "-n")])).is_ok(), "{text}");
        }
        let mut r = param("a");
        r.raw = true;
        assert!(t.expand(&[r], &values(&[("a", "-n 1")])).is_ok());
        a.default = Some("d".into());
        let e = t.expand(&[a], &values(&[])).expect("default");
        assert_eq!(e.env, vec![("DACLI_P_a".to_string(), "d".to_string())]);
    }

    #[test]
    fn quoting() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("'"), "''\\'''");
        assert_eq!(param_signature(&[param("f")]), vec!["f?"]);
    }
}
