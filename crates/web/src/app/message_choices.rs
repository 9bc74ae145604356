//! What a person hears of, on their account page: for each kind of message,
//! immediately, in a daily digest, not at all, or as the organization chose.

use agentprocess_service::{Choice, Choices, MessageKind, OrgMessageSettings};
use maud::{Markup, html};

use super::forms::sent;

/// A choice in words.
pub(super) fn in_words(choice: Choice) -> &'static str {
    match choice {
        Choice::Immediately => "Immediately",
        Choice::Daily => "In a daily digest",
        Choice::Off => "Off",
    }
}

/// A choice per kind, each a select named after its kind. With `organization`, a
/// person's: leaving a kind to the organization is the first option.
pub(super) fn selects(current: &Choices, organization: Option<&OrgMessageSettings>) -> Markup {
    html! {
        @for kind in MessageKind::ALL {
            @let id = format!("hear-{}", kind.as_str());
            div class="field" {
                label for=(id) { (kind.described()) }
                select id=(id) name=(kind.as_str()) {
                    @if let Some(organization) = organization {
                        option value="" selected[current.get(kind).is_none()] {
                            "As the organization chose (" (in_words(organization.choice(None, kind)).to_lowercase()) ")"
                        }
                    }
                    @for choice in Choice::ALL {
                        @let chosen = current.get(kind).or(organization.is_none().then_some(Choice::Immediately));
                        option value=(choice.as_str()) selected[chosen == Some(choice)] { (in_words(choice)) }
                    }
                }
            }
        }
    }
}

/// When digests and reminders go out, in words.
pub(super) fn cadence(organization: &OrgMessageSettings) -> Markup {
    html! {
        "Daily digests are sent at " (format!("{:02}:00", organization.digest_hour_utc)) " UTC. "
        @match organization.remind_every_hours {
            0 => "Overdue items get no reminders.",
            24 => "Overdue items are reminded of daily.",
            hours => { "Overdue items are reminded of every " (hours) " hours." }
        }
    }
}

/// A person's form: a choice per kind, the organization's default named.
pub(super) fn form(organization: &OrgMessageSettings, own: &Choices, csrf: &str) -> Markup {
    html! {
        form method="post" action="/account/messages" {
            input type="hidden" name="csrf" value=(csrf);
            (selects(own, Some(organization)))
            p class="quiet" { (cadence(organization)) }
            button type="submit" class="primary" { "Save what I hear of" }
        }
    }
}

/// The choices a submitted form makes, or every issue with it.
pub(super) fn chosen(form: &[(String, String)]) -> Result<Choices, Vec<String>> {
    let mut choices = Choices::default();
    let mut issues = Vec::new();
    for kind in MessageKind::ALL {
        match sent(form, kind.as_str()).filter(|value| !value.is_empty()) {
            None => {}
            Some(value) => match Choice::parse(value) {
                Some(choice) => {
                    choices.0.insert(kind, choice);
                }
                None => issues.push(format!("{}: immediately, daily or off", kind.as_str())),
            },
        }
    }
    if issues.is_empty() { Ok(choices) } else { Err(issues) }
}
