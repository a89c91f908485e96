//! The GitHub REST answers `pr diagnose` reads, as typed data (API version 2022-11-28). Only
//! the fields dacli uses are declared; a field GitHub documents as required is required here,
//! so a renamed or missing one fails decoding (and one test), never a verdict at run time.
//! Fields GitHub documents as nullable or optional are `Option`.

use serde::Deserialize;

/// `GET /repos/{o}/{r}/pulls/{n}`.
#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub draft: Option<bool>,
    #[serde(default)]
    pub merged: Option<bool>,
    #[serde(default)]
    pub merged_at: Option<String>,
    /// `null` while GitHub is still computing it.
    #[serde(default)]
    pub mergeable: Option<bool>,
    #[serde(default)]
    pub mergeable_state: Option<String>,
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    pub head: BranchRef,
    pub base: BranchRef,
    #[serde(default)]
    pub auto_merge: Option<AutoMerge>,
}

/// `head` or `base` of a pull request.
#[derive(Debug, Clone, Deserialize)]
pub struct BranchRef {
    pub sha: String,
    #[serde(rename = "ref")]
    pub name: String,
    /// `null` when the fork was deleted.
    #[serde(default)]
    pub repo: Option<RepoName>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RepoName {
    pub full_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AutoMerge {
    #[serde(default)]
    pub merge_method: Option<String>,
}

/// An item of `GET /repos/{o}/{r}/pulls?head=` or `.../commits/{sha}/pulls`.
#[derive(Debug, Clone, Deserialize)]
pub struct PullSummary {
    pub number: u64,
    pub state: String,
}

/// An item of `check_runs` in `GET .../commits/{ref}/check-runs`.
#[derive(Debug, Clone, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    /// `queued`, `in_progress`, `completed`, `waiting`, `requested`, `pending`.
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub details_url: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub app: Option<App>,
    #[serde(default)]
    pub check_suite: Option<Id>,
    #[serde(default)]
    pub output: Option<CheckOutput>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct App {
    #[serde(default)]
    pub slug: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Id {
    pub id: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckOutput {
    pub annotations_count: u64,
}

/// `GET .../commits/{ref}/status`.
#[derive(Debug, Clone, Deserialize)]
pub struct CombinedStatus {
    pub total_count: u64,
    pub statuses: Vec<Status>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Status {
    pub context: String,
    /// `error`, `failure`, `pending`, `success`.
    pub state: String,
    #[serde(default)]
    pub target_url: Option<String>,
}

/// An item of `workflow_runs` in `GET .../actions/runs`.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    #[serde(default)]
    pub name: Option<String>,
    pub path: String,
    pub event: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub run_attempt: Option<u64>,
    #[serde(default)]
    pub check_suite_id: Option<u64>,
}

/// An item of `jobs` in `GET .../actions/runs/{id}/jobs`.
#[derive(Debug, Clone, Deserialize)]
pub struct Job {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub name: String,
    #[serde(default)]
    pub conclusion: Option<String>,
}

/// An item of `GET .../check-runs/{id}/annotations`.
#[derive(Debug, Clone, Deserialize)]
pub struct CheckAnnotation {
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
    #[serde(default)]
    pub annotation_level: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub raw_details: Option<String>,
}

/// An item of `GET .../pulls/{n}/reviews`.
#[derive(Debug, Clone, Deserialize)]
pub struct Review {
    /// `null` for a deleted account.
    #[serde(default)]
    pub user: Option<User>,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED`, `PENDING`.
    pub state: String,
    /// `null` when the reviewed commit is gone.
    #[serde(default)]
    pub commit_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub login: String,
}

/// An item of `GET .../rules/branches/{branch}`: the rule's type and the parameters dacli
/// reads, whichever rule type carries them.
#[derive(Debug, Clone, Deserialize)]
pub struct BranchRule {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub parameters: Option<RuleParameters>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RuleParameters {
    #[serde(default)]
    pub strict_required_status_checks_policy: Option<bool>,
    #[serde(default)]
    pub required_status_checks: Option<Vec<StatusCheckContext>>,
    #[serde(default)]
    pub required_approving_review_count: Option<u64>,
    #[serde(default)]
    pub require_code_owner_review: Option<bool>,
    #[serde(default)]
    pub require_last_push_approval: Option<bool>,
    #[serde(default)]
    pub required_review_thread_resolution: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StatusCheckContext {
    pub context: String,
}

/// `GET .../branches/{branch}/protection`.
#[derive(Debug, Clone, Deserialize)]
pub struct BranchProtection {
    #[serde(default)]
    pub required_status_checks: Option<ProtectionChecks>,
    #[serde(default)]
    pub required_pull_request_reviews: Option<ProtectionReviews>,
    #[serde(default)]
    pub required_conversation_resolution: Option<Enabled>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProtectionChecks {
    #[serde(default)]
    pub strict: Option<bool>,
    #[serde(default)]
    pub contexts: Vec<String>,
    #[serde(default)]
    pub checks: Vec<StatusCheckContext>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProtectionReviews {
    #[serde(default)]
    pub required_approving_review_count: Option<u64>,
    #[serde(default)]
    pub require_code_owner_reviews: Option<bool>,
    #[serde(default)]
    pub require_last_push_approval: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Enabled {
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `GET .../actions/workflows`.
#[derive(Debug, Clone, Deserialize)]
pub struct Workflows {
    pub total_count: u64,
}

/// `GET /search/issues`: issues and pull requests matching a query. The items stay JSON: the
/// projection reads only their marker, number, URL and state, the fields the issue list has.
#[derive(Debug, Clone, Deserialize)]
pub struct SearchIssues {
    pub total_count: u64,
    /// GitHub stopped the search early (a timeout): an empty answer proves nothing.
    pub incomplete_results: bool,
    pub items: Vec<serde_json::Value>,
}

/// The answer of the GraphQL query for a pull request's review decision.
#[derive(Debug, Clone, Deserialize)]
pub struct ReviewDecisionAnswer {
    #[serde(default)]
    pub data: Option<ReviewDecisionData>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReviewDecisionData {
    #[serde(default)]
    pub repository: Option<ReviewDecisionRepo>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewDecisionRepo {
    #[serde(default)]
    pub pull_request: Option<ReviewDecisionPr>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewDecisionPr {
    /// `APPROVED`, `CHANGES_REQUESTED`, `REVIEW_REQUIRED`, or `null` when no review is
    /// required.
    #[serde(default)]
    pub review_decision: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    fn fixture(name: &str) -> Value {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/github")
            .join(format!("{name}.json"));
        serde_json::from_str(&std::fs::read_to_string(&p).expect("fixture")).expect("json")
    }

    fn decodes<T: DeserializeOwned>(v: Value) -> bool {
        serde_json::from_value::<T>(v).is_ok()
    }

    #[test]
    fn every_fixture_decodes_and_a_renamed_field_does_not() {
        assert!(decodes::<PullRequest>(fixture("pull")));
        assert!(decodes::<Vec<PullSummary>>(fixture("pulls_by_head")));
        assert!(decodes::<Vec<CheckRun>>(
            fixture("check_runs_failing")["check_runs"].clone()
        ));
        assert!(decodes::<CombinedStatus>(fixture("status_empty")));
        assert!(decodes::<Vec<WorkflowRun>>(
            fixture("runs_failing")["workflow_runs"].clone()
        ));
        assert!(decodes::<Vec<Job>>(fixture("jobs_failing")["jobs"].clone()));
        assert!(decodes::<Vec<CheckAnnotation>>(fixture("annotations_test")));
        assert!(decodes::<Vec<Review>>(fixture("reviews_approved")));
        assert!(decodes::<Vec<BranchRule>>(fixture("rules_main")));
        assert!(decodes::<BranchProtection>(fixture("protection_main")));
        assert!(decodes::<Workflows>(fixture("workflows_one")));
        assert!(decodes::<SearchIssues>(fixture("search_issues")));
        let mut renamed = fixture("pull");
        let head = renamed["head"].take();
        renamed["head_branch"] = head;
        assert!(!decodes::<PullRequest>(renamed));
        let mut renamed = fixture("check_runs_failing")["check_runs"].clone();
        let status = renamed[0]["status"].take();
        renamed[0]["state"] = status;
        assert!(!decodes::<Vec<CheckRun>>(renamed));
    }
}
