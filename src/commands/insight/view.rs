//! The folded view every insight command reads (FORMAT §14.3 "Fold"): every task with its
//! pending events applied in memory, and the shapes the commands share (`TaskSummary`).

use crate::dispatch::{Ctx, Error};
pub(super) use crate::journal::view::TaskSummary;
use crate::journal::view::World;
use crate::model::task::Estimate;
use crate::objects::projects;
use crate::objects::tasks::Located;
use crate::policy::plan::round2;
use crate::workspace::names::check_slug;

/// The folded view every insight command reads.
pub(super) type View = World;

/// Loads the folded view; skipped files become the envelope's warnings.
pub(super) fn load(ctx: &Ctx) -> Result<View, Error> {
    let _building = ctx.index_progress();
    let world = World::load(ctx.ws()?, &|f| crate::policy::dod::evaluate(f).passed)?;
    ctx.warn_all(world.warnings.clone());
    Ok(world)
}

/// A task's estimate; the listing already skipped files whose estimate is invalid.
pub(super) fn estimate_of(t: &Located) -> Option<Estimate> {
    t.doc.estimate().ok().flatten()
}

/// Resolves `--project` (a slug or `p-<slug>`) to an existing project's slug.
pub(super) fn project_slug(ctx: &Ctx, arg: Option<&str>) -> Result<Option<String>, Error> {
    let Some(p) = arg else {
        return Ok(None);
    };
    let slug = p.strip_prefix("p-").unwrap_or(p);
    check_slug(slug).map_err(Error::bad_slug)?;
    let listing = projects::list(ctx.ws()?)?;
    ctx.warn_all(listing.warnings);
    if !listing.items.iter().any(|x| x.slug == slug) {
        return Err(
            Error::not_found(format!("no project `{slug}` in this workspace"))
                .hint("list projects with `dacli status`"),
        );
    }
    Ok(Some(slug.to_string()))
}

/// An effort figure for text output: two decimals, trailing zeros dropped.
pub(super) fn effort_text(v: f64) -> String {
    let s = format!("{:.2}", round2(v));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
