//! Planning arithmetic: readiness and its order (COMMANDS.md §5 `task list --ready`), PERT
//! rollups for the work breakdown, and the burndown and velocity series (§9). Values in,
//! values out; the caller supplies the folded view of every task and the current time.

use std::collections::{BTreeMap, BTreeSet};

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp, ToSpan};

use crate::model::task::{Dependency, Estimate, LogLine, Status};

pub use crate::model::task::PlanTask;

/// The rank of a MoSCoW priority: `must` 0, `should` 1, `could` 2, `wont` (and anything
/// unknown) 3.
pub fn priority_rank(priority: &str) -> u8 {
    match priority {
        "must" => 0,
        "should" => 1,
        "could" => 2,
        _ => 3,
    }
}

/// Indices of the ready tasks of `tasks`, in `task list --ready` order.
///
/// Ready: open, no assignee, priority not `wont`, no child task that is not done, and every
/// dependency satisfied (`FS`: the predecessor is done; `SS`: it is active or done; `FF` and
/// `SF` constrain finishing, not starting). A dependency on a task that is not in `tasks` is
/// not satisfied: nothing proves it is. Order: priority (must, should, could), then the number
/// of not-done tasks that transitively depend on the task (descending), then project, number
/// and id. Pass every task of the workspace (dependencies cross projects) and filter after.
pub fn ready(tasks: &[PlanTask]) -> Vec<usize> {
    let by_id = index(tasks);
    let mut open_children: BTreeSet<&str> = BTreeSet::new();
    for t in tasks.iter().filter(|t| t.status != Status::Done) {
        if let Some(p) = &t.parent {
            open_children.insert(p.as_str());
        }
    }
    let mut ready: Vec<usize> = (0..tasks.len())
        .filter(|&i| {
            let t = &tasks[i];
            t.status == Status::Open
                && t.assignee.is_none()
                && t.priority != "wont"
                && !open_children.contains(t.id.as_str())
                && t.depends_on.iter().all(|d| satisfied(tasks, &by_id, d))
        })
        .collect();
    let unblocks = dependents(tasks, &ready);
    ready.sort_by(|&a, &b| {
        let (ta, tb) = (&tasks[a], &tasks[b]);
        priority_rank(&ta.priority)
            .cmp(&priority_rank(&tb.priority))
            .then(unblocks[&b].cmp(&unblocks[&a]))
            .then_with(|| ta.project.cmp(&tb.project))
            .then(ta.number.cmp(&tb.number))
            .then_with(|| ta.id.cmp(&tb.id))
    });
    ready
}

/// For each index of `which`, the number of not-done tasks that transitively depend on that
/// task through `depends_on` (any type); what `next` calls "unblocks N".
pub fn dependents(tasks: &[PlanTask], which: &[usize]) -> BTreeMap<usize, usize> {
    let mut reverse: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        for d in &t.depends_on {
            reverse.entry(d.on.as_str()).or_default().push(i);
        }
    }
    which
        .iter()
        .map(|&start| {
            let mut seen: BTreeSet<usize> = BTreeSet::from([start]);
            let mut stack = vec![start];
            while let Some(i) = stack.pop() {
                for &j in reverse.get(tasks[i].id.as_str()).into_iter().flatten() {
                    if seen.insert(j) {
                        stack.push(j);
                    }
                }
            }
            let count = seen
                .iter()
                .filter(|&&j| j != start && tasks[j].status != Status::Done)
                .count();
            (start, count)
        })
        .collect()
}

fn index(tasks: &[PlanTask]) -> BTreeMap<&str, usize> {
    tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect()
}

fn satisfied(tasks: &[PlanTask], by_id: &BTreeMap<&str, usize>, d: &Dependency) -> bool {
    let Some(&p) = by_id.get(d.on.as_str()) else {
        return false;
    };
    let pred = tasks[p].status;
    match d.kind.as_str() {
        "SS" => matches!(pred, Status::Active | Status::Done),
        "FF" | "SF" => true,
        _ => pred == Status::Done,
    }
}

/// Rounds to two decimals, the precision every effort figure is shown with.
pub fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A PERT rollup over a set of tasks: expected efforts add up, standard deviations combine as
/// the root of the sum of squares. Unestimated tasks are counted apart and add no effort.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rollup {
    /// Sum of `Te`.
    pub expected: f64,
    /// Sum of `σ²`.
    pub variance: f64,
    /// Sum of `Te` of the tasks that are done.
    pub done: f64,
    pub tasks: usize,
    pub unestimated: usize,
}

impl Rollup {
    /// Adds one task.
    pub fn add(&mut self, estimate: Option<&Estimate>, done: bool) {
        self.tasks += 1;
        match estimate {
            Some(e) => {
                self.expected += e.expected();
                self.variance += e.sigma() * e.sigma();
                if done {
                    self.done += e.expected();
                }
            }
            None => self.unestimated += 1,
        }
    }

    /// Adds another rollup (a subtree).
    pub fn merge(&mut self, other: &Rollup) {
        self.expected += other.expected;
        self.variance += other.variance;
        self.done += other.done;
        self.tasks += other.tasks;
        self.unestimated += other.unestimated;
    }

    /// The combined standard deviation, `√Σσ²`.
    pub fn sigma(&self) -> f64 {
        self.variance.sqrt()
    }
}

/// Parses a `<TIME>` argument: RFC 3339, or a duration back from `now` written as a whole
/// number of days, hours or minutes (`90d`, `12h`, `30m`).
pub fn parse_time(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{t}` is not a time: give RFC 3339 (`2026-03-02T09:00:00Z`) or a duration back from now (`90d`, `12h`, `30m`)"
        )
    };
    if let Some(unit) = t.chars().last().filter(|c| matches!(c, 'd' | 'h' | 'm')) {
        let n: i64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
        if n < 0 {
            return Err(bad());
        }
        let secs = match unit {
            'd' => n.checked_mul(86_400),
            'h' => n.checked_mul(3_600),
            _ => n.checked_mul(60),
        }
        .ok_or_else(bad)?;
        return now
            .checked_sub(SignedDuration::from_secs(secs))
            .map_err(|_| bad());
    }
    t.parse::<Timestamp>().map_err(|_| bad())
}

/// The periods a task spent in `done/`, from the Log lines that moved it there (`finished`,
/// `closed …`, `status … -> done`) and back (`reopened: …`, `status done -> …`). The last
/// period is open-ended while the task is done. Lines with an unreadable timestamp are skipped.
pub fn done_periods(log: &[LogLine]) -> Vec<(Timestamp, Option<Timestamp>)> {
    let mut out: Vec<(Timestamp, Option<Timestamp>)> = Vec::new();
    for line in log {
        let Ok(at) = line.at.parse::<Timestamp>() else {
            continue;
        };
        let t = line.text.as_str();
        let enters = t == "finished"
            || t.starts_with("closed ")
            || (t.starts_with("status ") && t.ends_with("-> done"));
        let leaves = t.starts_with("reopened") || t.starts_with("status done ->");
        let inside = out.last().is_some_and(|(_, end)| end.is_none());
        if enters && !inside {
            out.push((at, None));
        } else if leaves
            && inside
            && let Some(last) = out.last_mut()
        {
            last.1 = Some(at);
        }
    }
    out
}

/// One task as the burndown sees it.
#[derive(Debug, Clone)]
pub struct BurnTask {
    pub created: Timestamp,
    /// `Te`; `None` for an unestimated task.
    pub expected: Option<f64>,
    /// From [`done_periods`].
    pub done: Vec<(Timestamp, Option<Timestamp>)>,
}

/// One day of a burndown.
#[derive(Debug, Clone, PartialEq)]
pub struct BurnPoint {
    pub date: Date,
    pub scope: f64,
    pub done: f64,
    pub remaining: f64,
}

/// One point per UTC day from `since` to `until` (both inclusive), each taken at the end of
/// its day or at `until`, whichever comes first: `scope` is the `Te` of the estimated tasks
/// created by then, `done` the `Te` of those in `done/` then, `remaining = scope − done`.
pub fn burndown(tasks: &[BurnTask], since: Timestamp, until: Timestamp) -> Vec<BurnPoint> {
    let mut out = Vec::new();
    let last = utc_date(until);
    let mut day = utc_date(since);
    while day <= last {
        let cutoff = end_of_day(day).min(until);
        let (mut scope, mut done) = (0.0, 0.0);
        for t in tasks.iter().filter(|t| t.created <= cutoff) {
            let Some(te) = t.expected else {
                continue;
            };
            scope += te;
            let is_done = t
                .done
                .iter()
                .any(|(from, to)| *from <= cutoff && to.is_none_or(|to| to > cutoff));
            if is_done {
                done += te;
            }
        }
        out.push(BurnPoint {
            date: day,
            scope: round2(scope),
            done: round2(done),
            remaining: round2(scope - done),
        });
        match day.checked_add(1.day()) {
            Ok(next) => day = next,
            Err(_) => break,
        }
    }
    out
}

/// The UTC calendar date of an instant.
pub fn utc_date(t: Timestamp) -> Date {
    t.to_zoned(jiff::tz::TimeZone::UTC).date()
}

/// The last representable instant of a UTC day.
fn end_of_day(day: Date) -> Timestamp {
    day.checked_add(1.day())
        .ok()
        .and_then(|next| next.to_zoned(jiff::tz::TimeZone::UTC).ok())
        .map(|z| z.timestamp())
        .and_then(|t| t.checked_sub(SignedDuration::from_nanos(1)).ok())
        .unwrap_or(Timestamp::MAX)
}

/// The ISO week of an instant (UTC), written `2026-W10`.
pub fn iso_week(t: Timestamp) -> String {
    let w = utc_date(t).iso_week_date();
    format!("{:04}-W{:02}", w.year(), w.week())
}

/// One ISO week of a velocity series.
#[derive(Debug, Clone, PartialEq)]
pub struct WeekPoint {
    pub week: String,
    pub points: f64,
    pub tasks: usize,
}

/// Effort completed per ISO week over the `weeks` weeks that end with the week of `now`
/// (oldest first), from `(completed at, Te)` pairs; an unestimated task counts as a task with
/// no points. Returns the series and the mean points per week.
pub fn velocity(
    completions: &[(Timestamp, Option<f64>)],
    now: Timestamp,
    weeks: u32,
) -> (Vec<WeekPoint>, f64) {
    let mut series: Vec<WeekPoint> = (0..weeks)
        .rev()
        .filter_map(|back| {
            let at = now.checked_sub(SignedDuration::from_hours(24 * 7 * i64::from(back)));
            at.ok().map(|t| WeekPoint {
                week: iso_week(t),
                points: 0.0,
                tasks: 0,
            })
        })
        .collect();
    for (at, te) in completions {
        let week = iso_week(*at);
        if let Some(p) = series.iter_mut().find(|p| p.week == week) {
            p.points += te.unwrap_or(0.0);
            p.tasks += 1;
        }
    }
    let total: f64 = series.iter().map(|p| p.points).sum();
    for p in &mut series {
        p.points = round2(p.points);
    }
    let mean = if series.is_empty() {
        0.0
    } else {
        round2(total / series.len() as f64)
    };
    (series, mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(n: u32, status: Status, priority: &str) -> PlanTask {
        PlanTask {
            id: format!("t-{n}"),
            project: "p".into(),
            number: n,
            status,
            assignee: None,
            priority: priority.into(),
            parent: None,
            depends_on: Vec::new(),
            estimate: None,
        }
    }

    fn dep(on: u32, kind: &str) -> Dependency {
        Dependency {
            on: format!("t-{on}"),
            kind: kind.into(),
        }
    }

    #[test]
    fn readiness_follows_the_rules() {
        let mut t = vec![
            task(1, Status::Open, "should"),
            task(2, Status::Active, "must"),
            task(3, Status::Open, "wont"),
            task(4, Status::Open, "must"),
            task(5, Status::Open, "must"),
            task(6, Status::Open, "could"),
            task(7, Status::Open, "should"),
            task(8, Status::Open, "should"),
        ];
        t[3].depends_on = vec![dep(2, "FS")]; // predecessor active: not ready
        t[4].depends_on = vec![dep(2, "SS"), dep(6, "FF")]; // SS active, FF: ready
        t[6].parent = Some("t-1".into()); // 1 has an open child: not ready
        t[7].depends_on = vec![dep(99, "FS")]; // unknown predecessor: not ready
        let mut claimed = task(9, Status::Open, "must");
        claimed.assignee = Some("a-root".into());
        t.push(claimed);
        let ids: Vec<u32> = ready(&t).into_iter().map(|i| t[i].number).collect();
        assert_eq!(ids, vec![5, 7, 6]);
    }

    #[test]
    fn order_is_priority_then_dependents_then_number() {
        let mut t = vec![
            task(1, Status::Open, "should"),
            task(2, Status::Open, "should"),
            task(3, Status::Open, "should"),
            task(4, Status::Open, "could"),
            task(5, Status::Open, "should"),
            task(6, Status::Done, "should"),
        ];
        // 2 unblocks 3 directly and 4 through 3; done 6 depends on 2 but is not counted.
        t[2].depends_on = vec![dep(2, "FS")];
        t[3].depends_on = vec![dep(3, "FS")];
        t[5].depends_on = vec![dep(2, "FS")];
        let order: Vec<u32> = ready(&t).into_iter().map(|i| t[i].number).collect();
        assert_eq!(order, vec![2, 1, 5]);
        let counts = dependents(&t, &[1]);
        assert_eq!(counts[&1], 2);
    }

    #[test]
    fn rollups_add_expected_and_combine_sigma() {
        let a = Estimate::new(2.0, 4.0, 9.0).expect("valid");
        let b = Estimate::new(1.0, 2.0, 4.0).expect("valid");
        assert_eq!(round2(a.expected()), 4.5);
        assert_eq!(round2(a.sigma()), 1.17);
        let mut r = Rollup::default();
        r.add(Some(&a), true);
        r.add(Some(&b), false);
        r.add(None, false);
        assert_eq!(round2(r.expected), round2(4.5 + 13.0 / 6.0));
        assert_eq!(round2(r.sigma()), round2((49.0f64 / 36.0 + 0.25).sqrt()));
        assert_eq!((r.tasks, r.unestimated, r.done), (3, 1, 4.5));
    }

    #[test]
    fn times_parse_as_rfc3339_or_durations_back() {
        let now: Timestamp = "2026-03-10T12:00:00Z".parse().expect("ts");
        let t = |s| parse_time(s, now).map(|t| t.to_string());
        assert_eq!(t("90d").expect("d"), "2025-12-10T12:00:00Z");
        assert_eq!(t("12h").expect("h"), "2026-03-10T00:00:00Z");
        assert_eq!(t("30m").expect("m"), "2026-03-10T11:30:00Z");
        assert_eq!(
            t("2026-03-02T09:00:00+01:00").expect("rfc"),
            "2026-03-02T08:00:00Z"
        );
        assert!(t("yesterday").is_err() && t("-3d").is_err() && t("3w").is_err());
    }

    fn line(at: &str, text: &str) -> LogLine {
        LogLine {
            at: at.into(),
            agent: "a-root".into(),
            text: text.into(),
            event: None,
        }
    }

    #[test]
    fn burndown_returns_reopened_work() {
        let log = vec![
            line("2026-03-02T09:00:00Z", "created"),
            line("2026-03-03T10:00:00Z", "finished"),
            line("2026-03-04T10:00:00Z", "reopened: regressed"),
            line("2026-03-05T10:00:00Z", "closed unverified: shipped"),
        ];
        let periods = done_periods(&log);
        assert_eq!(periods.len(), 2);
        let ts = |s: &str| s.parse::<Timestamp>().expect("ts");
        let tasks = vec![
            BurnTask {
                created: ts("2026-03-02T09:00:00Z"),
                expected: Some(4.5),
                done: periods,
            },
            BurnTask {
                created: ts("2026-03-03T12:00:00Z"),
                expected: Some(2.0),
                done: Vec::new(),
            },
            BurnTask {
                created: ts("2026-03-02T09:00:00Z"),
                expected: None,
                done: Vec::new(),
            },
        ];
        let series = burndown(
            &tasks,
            ts("2026-03-02T00:00:00Z"),
            ts("2026-03-05T09:00:00Z"),
        );
        let rows: Vec<(String, f64, f64, f64)> = series
            .iter()
            .map(|p| (p.date.to_string(), p.scope, p.done, p.remaining))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("2026-03-02".into(), 4.5, 0.0, 4.5),
                ("2026-03-03".into(), 6.5, 4.5, 2.0),
                ("2026-03-04".into(), 6.5, 0.0, 6.5),
                // until 09:00 comes before the close at 10:00
                ("2026-03-05".into(), 6.5, 0.0, 6.5),
            ]
        );
    }

    #[test]
    fn velocity_groups_by_iso_week() {
        let ts = |s: &str| s.parse::<Timestamp>().expect("ts");
        let now = ts("2026-03-10T12:00:00Z"); // Tuesday of 2026-W11
        let done = vec![
            (ts("2026-03-09T08:00:00Z"), Some(4.5)),
            (ts("2026-03-03T08:00:00Z"), Some(2.0)),
            (ts("2026-03-04T08:00:00Z"), None),
            (ts("2026-01-01T08:00:00Z"), Some(9.0)),
        ];
        let (series, mean) = velocity(&done, now, 3);
        let weeks: Vec<(&str, f64, usize)> = series
            .iter()
            .map(|p| (p.week.as_str(), p.points, p.tasks))
            .collect();
        assert_eq!(
            weeks,
            vec![
                ("2026-W09", 0.0, 0),
                ("2026-W10", 2.0, 2),
                ("2026-W11", 4.5, 1)
            ]
        );
        assert_eq!(mean, round2(6.5 / 3.0));
    }
}
