//! The static token counters (`brief::tokens`) count exactly what tiktoken-rs counts with
//! `encode_ordinary`, for both vocabularies: on real briefs of the bundled example, on a corpus
//! of the texts where a split pattern or a merge is easiest to get wrong, and on random text.

use std::path::Path;

use dacli::brief::tokens::Tokenizer;
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

use crate::support::{Repo, one_json, repo_root};

const BUILDER: &str = "dacli_a-builder-01KJPX6ZT81TTNRTABC9KBJYTV_21da8978206f5c6671e0c07e9e115e4b9e30691c238642ea126a1e48cc11d357";

fn both() -> [(Tokenizer, &'static CoreBPE); 2] {
    [
        (Tokenizer::O200kBase, tiktoken_rs::o200k_base_singleton()),
        (Tokenizer::Cl100kBase, tiktoken_rs::cl100k_base_singleton()),
    ]
}

/// tiktoken-rs's tokens of `text`, each as its bytes.
fn reference_tokens(reference: &CoreBPE, text: &str) -> Vec<Vec<u8>> {
    reference
        .encode_ordinary(text)
        .into_iter()
        .map(|rank| reference.decode_bytes(&[rank]).unwrap())
        .collect()
}

/// Fails naming the text and the tokenizer when a count, or a token, differs from
/// tiktoken-rs's (equal counts alone could hide a split in the wrong place).
fn assert_counts_match(text: &str) {
    for (ours, reference) in both() {
        assert_eq!(
            ours.count(text),
            reference.count_ordinary(text),
            "{}: {text:?}",
            ours.name()
        );
        assert_eq!(
            ours.token_bytes(text),
            reference_tokens(reference, text),
            "{}: {text:?}",
            ours.name()
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (path, name) = (entry.path(), entry.file_name());
        if name == "cache" {
            continue;
        }
        if path.is_dir() {
            copy_tree(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

fn example_texts(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            example_texts(&path, out);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            out.push(text);
        }
    }
}

#[test]
fn real_briefs_of_the_example_count_as_tiktoken_counts_them() {
    let repo = Repo::new();
    copy_tree(
        &repo_root().join(".dacli-example"),
        &repo.path().join(".dacli"),
    );
    let tasks = repo.ws("projects/checkout/tasks");
    let mut briefs = Vec::new();
    for folder in ["open", "active", "blocked", "done"] {
        for entry in std::fs::read_dir(tasks.join(folder)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let reference = format!("checkout/{}", name.trim_end_matches(".md"));
            for budget in ["400", "8000"] {
                let out = repo
                    .dacli(&["context", &reference, "--budget", budget, "--json"])
                    .env("DACLI_AGENT", BUILDER)
                    .output()
                    .unwrap();
                let doc = one_json(&out.stdout);
                if let Some(md) = doc["data"]["brief"].as_str() {
                    briefs.push(md.to_string());
                }
            }
        }
    }
    assert!(briefs.len() >= 14, "only {} briefs rendered", briefs.len());
    for md in &briefs {
        assert_counts_match(md);
    }
    // Every file of the example, whole: tasks, notes, roles, events, config.
    let mut texts = Vec::new();
    example_texts(&repo_root().join(".dacli-example"), &mut texts);
    assert!(texts.len() > 20);
    for text in &texts {
        assert_counts_match(text);
    }
}

#[test]
fn a_corpus_of_hard_cases_counts_as_tiktoken_counts_it() {
    let long_word = "a".repeat(300);
    let long_hex: String = (0..400)
        .map(|i| b"0123456789abcdef"[i % 16] as char)
        .collect();
    let long_mixed: String = (0..250)
        .map(|i| ["xy", "Z", "ö", "_", "😀", "q7"][i % 6])
        .collect();
    let corpus = [
        "",
        " ",
        "  ",
        "\n",
        "\r\n",
        " \n ",
        "  \n\n  x",
        "\t\t\tfn main() {}\n",
        "hello world",
        "Hello, World!",
        "   leading and trailing   ",
        "trailing spaces   ",
        "line one\nline two\r\nline three\n\n\n",
        "I'm sure you'll see they've we're he'd she's it'S IT'LL 'T 'Re",
        "don'ſ x'ſ 'ſ",
        "'s 's's ''s '",
        "1 12 123 1234 12345 3.14159 1,000,000 ٣٤٥ ⅻ ½",
        "2026-12-03T12:10:19Z 0x1F 1e-9",
        "CamelCaseWord HTTPServer iPhone XMLHttpRequest ÉCOLE École ǅungla",
        "日本語のテキスト、中文文本。한국어 텍스트",
        "Ελληνικά кириллица עברית العربية हिन्दी ไทย",
        "e\u{301} a\u{300}\u{301}b \u{301}\u{302} x\u{20dd} \u{0903}word",
        "😀 😀😀 👨‍👩‍👧‍👦 🇫🇷 ✨✨ ❤️",
        "\u{a0}non-breaking\u{2003}em space\u{3000}ideographic\u{85}nel\u{2028}ls",
        "\u{b}vertical\u{c}feed\u{1c}sep\u{200b}zero-width",
        "a/b//c///\n/path/to/file.rs:12:5\n//! doc\n",
        "!!!\n\n/// ...\r\n\r\n--- *** ___",
        "<|endoftext|> <|fim_prefix|> <|endofprompt|>",
        "fn count(self, text: &str) -> usize {\n    match self { _ => 0 }\n}\n",
        "    let x = vec![1, 2, 3];\n\tif x.len() > 2 { return; }\n",
        "def f(x):\n    return x ** 2  # square\n",
        "SELECT sum(amount_cents) FROM orders WHERE id = $1;",
        "{\"key\": [1, 2.5, null, true], \"ü\": \"ß\"}",
        "<!-- dacli brief · t-0 · budget 1 · 1 tokens (o200k_base) -->",
        "> **a-root** (root, on 002-add-the-ledger-shim, major):\n> Delete.",
        "| a | b |\n|---|---|\n| 1 | 2 |\n",
        "https://example.com/a?b=c&d=e#f",
        "\u{feff}bom \u{fffd} \u{10ffff} \u{e000}",
        &long_word,
        &long_hex,
        &long_mixed,
        &" ".repeat(150),
        &"\n".repeat(120),
        &"!?".repeat(80),
    ];
    for text in corpus {
        assert_counts_match(text);
    }
}

/// Characters from every class the split patterns tell apart, weighted towards the ones
/// whose boundaries are subtle.
fn tricky_char() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        'a', 'z', 'A', 'Z', 's', 'S', 't', 'T', 'l', 'L', 'r', 'v', 'e', 'm', 'd', 'D', 'ſ', '\'',
        '0', '7', '٣', '½', 'Ⅻ', ' ', ' ', ' ', '\t', '\n', '\r', '\u{b}', '\u{a0}', '\u{3000}',
        '\u{85}', '/', '.', ',', '!', '-', '_', '#', '{', '}', '(', '"', 'é', 'ß', 'Ç', 'ǅ', 'ʰ',
        '々', '日', '한', 'Ω', 'ω', 'ж', 'Ж', '\u{301}', '\u{903}', '\u{20dd}', '😀', '\u{200d}',
        '\u{fe0f}', '€', '\u{fffd}', '\u{e000}',
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_text_counts_as_tiktoken_counts_it(
        chars in prop::collection::vec(tricky_char(), 0..160),
    ) {
        let text: String = chars.into_iter().collect();
        for (ours, reference) in both() {
            prop_assert_eq!(ours.count(&text), reference.count_ordinary(&text), "{}: {:?}", ours.name(), text);
            prop_assert_eq!(ours.token_bytes(&text), reference_tokens(reference, &text), "{}: {:?}", ours.name(), text);
        }
    }

    #[test]
    fn arbitrary_unicode_counts_as_tiktoken_counts_it(text in any::<String>()) {
        for (ours, reference) in both() {
            prop_assert_eq!(ours.count(&text), reference.count_ordinary(&text), "{}: {:?}", ours.name(), text);
            prop_assert_eq!(ours.token_bytes(&text), reference_tokens(reference, &text), "{}: {:?}", ours.name(), text);
        }
    }

    #[test]
    fn long_pieces_merge_as_tiktoken_merges_them(
        chars in prop::collection::vec(
            prop::sample::select(vec!['a', 'b', 'e', 'x', '0', '1', 'é', '日', '😀', '!', '/']),
            90..400,
        ),
    ) {
        let text: String = chars.into_iter().collect();
        for (ours, reference) in both() {
            prop_assert_eq!(ours.count(&text), reference.count_ordinary(&text), "{}: {:?}", ours.name(), text);
            prop_assert_eq!(ours.token_bytes(&text), reference_tokens(reference, &text), "{}: {:?}", ours.name(), text);
        }
    }
}
