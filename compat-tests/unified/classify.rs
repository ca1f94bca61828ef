//! Rules that propose a reason and issue for a failure when the expectations draft is recorded:
//! the first rule whose needle occurs in the failure message wins. The draft is reviewed before
//! it becomes `expectations.toml`.

/// (needle in the failure message, reason, issue number or "none").
pub const RULES: &[(&str, &str, &str)] = &[];
