//! Templates: built-ins, seeding at init, vendoring, and the definition of done they bring.

use serde_json::Value;

use crate::support::Repo;

fn ok(repo: &Repo, args: &[&str]) -> Value {
    let (code, doc) = repo.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

#[test]
fn init_standard_roster_seeds_roles_shortcuts_and_a_definition_of_done_that_task_done_enforces() {
    let repo = Repo::new();
    let init = ok(&repo, &["init", "--template", "standard", "--roster"]);
    assert_eq!(init["data"]["template"], "standard");
    assert_eq!(
        init["data"]["seeded"]["roles"],
        serde_json::json!(["builder", "planner", "reviewer"])
    );
    assert_eq!(
        init["data"]["seeded"]["shortcuts"],
        serde_json::json!(["lint", "test"])
    );
    assert_eq!(init["data"]["seeded"]["definition_of_done"], true);
    let config = std::fs::read_to_string(repo.ws("config.toml")).unwrap();
    assert!(
        config.contains("[definition_of_done]\nlint = true\n"),
        "{config}"
    );
    let builder = std::fs::read_to_string(repo.ws("roles/builder.md")).unwrap();
    for line in [
        "kind = \"role\"",
        "name = \"builder\"",
        "created_by = \"a-root\"",
        "owner = \"a-root\"",
        "wip = 2",
    ] {
        assert!(builder.contains(line), "{line} missing:\n{builder}");
    }
    let doctor = ok(&repo, &["doctor"]);
    assert_eq!(
        doctor["data"]["checks"][1]["status"], "ok",
        "seeded files are well-formed"
    );
    assert_eq!(doctor["data"]["checks"][2]["status"], "ok", "and canonical");
    // The builder's toolkit is what the template says.
    let (_, token) = crate::lifecycle::agent(&repo, "builder", 40, "rw");
    let me = repo
        .dacli(&["whoami", "--json"])
        .env("DACLI_AGENT", &token)
        .output()
        .unwrap();
    let me = crate::support::one_json(&me.stdout);
    assert_eq!(me["data"]["toolkit"], serde_json::json!(["lint", "test"]));
    assert_eq!(me["data"]["wip"]["cap"], 2);

    // The template's lint rule blocks `done` for a task file with a lint error.
    ok(
        &repo,
        &[
            "project",
            "add",
            "P",
            "--slug",
            "checkout",
            "--template",
            "standard",
        ],
    );
    ok(&repo, &["task", "add", "Shim", "--accept", "works"]);
    ok(&repo, &["task", "check", "1", "--all"]);
    let file = repo.ws("projects/checkout/tasks/open/001-shim.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(
            "priority = \"should\"\n",
            "priority = \"should\"\nresolution = \"completed\"\n",
        ),
    )
    .unwrap();
    let (code, doc) = repo.json(&["task", "done", "1"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["refused"]["policy"], "dod.lint_failed");
    assert!(
        doc["refused"]["reason"]
            .as_str()
            .unwrap()
            .contains("schema")
    );
    std::fs::write(&file, text).unwrap();
    let done = ok(&repo, &["task", "done", "1"]);
    assert_eq!(done["data"]["resolution"], "completed");
}

#[test]
fn an_unknown_template_writes_nothing() {
    let repo = Repo::new();
    let (code, doc) = repo.json(&["init", "--template", "enterprise"]);
    assert_eq!(code, 4, "{doc}");
    assert!(!repo.ws("").exists());
}

#[test]
fn templates_list_show_and_vendor_for_editing() {
    let repo = Repo::initialized();
    let list = ok(&repo, &["template", "list"]);
    let names: Vec<&str> = list["data"]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["solo", "standard"]);
    let show = ok(&repo, &["template", "show", "standard"]);
    assert_eq!(
        show["data"]["template"]["stages"][0]["gates"][0],
        "glossary: min_terms 2"
    );
    assert_eq!(show["data"]["template"]["definition_of_done"]["lint"], true);
    let add = ok(
        &repo,
        &["template", "add", "standard", "--from", "standard"],
    );
    assert_eq!(add["data"]["path"], ".dacli/templates/standard/template.md");
    // The vendored copy shadows the built-in and is what projects use from now on.
    let path = repo.ws("templates/standard/template.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("Define, build, ship, with light gates", "Our own way"),
    )
    .unwrap();
    let list = ok(&repo, &["template", "list"]);
    assert_eq!(list["data"]["templates"][1]["source"], "workspace");
    assert_eq!(list["data"]["templates"][1]["summary"], "Our own way");
    let (code, _) = repo.json(&["template", "add", "standard", "--from", "solo"]);
    assert_eq!(code, 5, "name taken");
    let add = ok(
        &repo,
        &[
            "template",
            "add",
            "release",
            "--summary",
            "Ship only",
            "--stage",
            "ship",
        ],
    );
    assert_eq!(add["data"]["effect"], "created");
    let p = ok(&repo, &["project", "add", "R", "--template", "release"]);
    assert_eq!(p["data"]["project"]["stage"], "ship");
    let (code, doc) = repo.json(&[
        "project",
        "add",
        "S",
        "--template",
        "release",
        "--stage",
        "build",
    ]);
    assert_eq!(code, 2, "{doc}");
    let p = ok(&repo, &["project", "add", "T", "--template", "standard"]);
    assert_eq!(p["data"]["project"]["stage"], "define");
    assert!(
        repo.ws("projects/t/docs/README.md").exists(),
        "the template's docs are copied"
    );
}
