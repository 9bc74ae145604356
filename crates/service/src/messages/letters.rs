//! What a message says: the facts a person needs to decide whether to open it (the
//! process, the step by its title, the inputs the step's words name, when it is due)
//! and the link to the page where they act, as plain text and as HTML; a daily digest
//! lists several; a chat message is the plain text's first lines.

use agentprocess_engine::{ProcessVersion, Run};
use agentprocess_format::StepKind;
use maud::{DOCTYPE, Markup, html};

use super::choices::MessageKind;
use crate::work::RunFacts;

/// One thing a message tells.
pub(crate) struct Told<'a> {
    /// What kind of message.
    pub(crate) kind: MessageKind,
    /// Whether it was sent before (an overdue item's reminder).
    pub(crate) reminder: bool,
    /// The run, as it is now.
    pub(crate) run: &'a Run,
    /// The version it runs on.
    pub(crate) version: &'a ProcessVersion,
    /// The step it is about, if any.
    pub(crate) step: Option<&'a str>,
    /// Where the person acts: the work item's page, or the run's.
    pub(crate) link: String,
    /// Why this person hears of it ("you are in the finance group").
    pub(crate) why: String,
}

/// A message as sent by email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Letter {
    pub(crate) subject: String,
    pub(crate) text: String,
    pub(crate) html: String,
}

impl Told<'_> {
    /// What a person calls the step.
    fn step_title(&self) -> Option<String> {
        self.step
            .map(|step| agentprocess_words::step_title(self.version.process.body(), step))
    }

    /// The process as pages name it.
    fn process(&self) -> String {
        format!("{} v{}", self.run.process, self.run.version)
    }

    /// One line that says what happened.
    fn headline(&self) -> String {
        let step = self.step_title().unwrap_or_else(|| "A step".to_owned());
        match self.kind {
            MessageKind::Waiting => format!("{step} waits for you"),
            MessageKind::Overdue if self.reminder => format!("Reminder: {step} is still overdue"),
            MessageKind::Overdue => format!("{step} is overdue"),
            MessageKind::Escalation => format!("{step} was escalated to the operators"),
            MessageKind::Ended => match &self.run.end {
                Some(end) if end.cancelled => "Your run was cancelled".to_owned(),
                Some(end) => match end.outcome.as_deref() {
                    Some("rejected") => "Your run was rejected".to_owned(),
                    Some("failed") => "Your run failed".to_owned(),
                    Some(outcome) => format!("Your run ended: {outcome}"),
                    None => "Your run ended".to_owned(),
                },
                None => "Your run ended".to_owned(),
            },
        }
    }

    /// The facts, labelled, in the order they are shown.
    fn facts(&self) -> Vec<(String, String)> {
        let document = self.version.process.document();
        let mut facts = vec![("Process".to_owned(), self.process())];
        if let Some(step) = self.step {
            let text = match document.step(step).map(|step| &step.kind) {
                Some(StepKind::Task(text) | StepKind::Approve(text) | StepKind::Agent(text)) => text.as_str(),
                _ => "",
            };
            let held = RunFacts::of(self.run.clone());
            for (name, _, value) in agentprocess_words::facts_about(
                document,
                self.version.process.body(),
                &held.inputs,
                &held.outputs,
                step,
                text,
            ) {
                let shown = value.map_or_else(|| "not given".to_owned(), agentprocess_words::shown);
                facts.push((agentprocess_words::label(name), shown));
            }
            let due = self.run.step(step).and_then(|step| step.due_at);
            if let Some(due) = due {
                facts.push(("Due".to_owned(), due.strftime("%Y-%m-%d %H:%M UTC").to_string()));
            }
        }
        if let Some(end) = self.run.end.as_ref().filter(|_| self.kind == MessageKind::Ended) {
            if let Some(note) = &end.note {
                facts.push(("Note".to_owned(), note.clone()));
            }
            facts.push(("Ended".to_owned(), end.at.strftime("%Y-%m-%d %H:%M UTC").to_string()));
        }
        facts
    }

    /// The call to act, as the link's words.
    fn action(&self) -> &'static str {
        match self.kind {
            MessageKind::Waiting | MessageKind::Overdue | MessageKind::Escalation => "Open the work item",
            MessageKind::Ended => "Open the run",
        }
    }
}

/// The message telling `told`, from `organization`; `settings` is where the person
/// chooses what they hear of.
pub(crate) fn letter(told: &Told<'_>, organization: &str, settings: &str) -> Letter {
    let headline = told.headline();
    let subject = format!("{headline} · {}", told.process());
    let text = format!(
        "{headline}\n\n{}\n\n{}: {}\n\n{}",
        facts_text(told),
        told.action(),
        told.link,
        footer_text(&[told.why.as_str()], organization, settings)
    );
    let html = page(
        &subject,
        html! {
            h1 style="font-size:20px;margin:0 0 12px" { (headline) }
            (facts_html(told))
            (button(told))
        },
        &[told.why.as_str()],
        organization,
        settings,
    );
    Letter { subject, text, html }
}

/// One message listing every one of `told` (a daily digest).
pub(crate) fn digest(told: &[Told<'_>], organization: &str, settings: &str) -> Letter {
    let subject = match told.len() {
        1 => format!("Your daily digest: {}", told[0].headline()),
        count => format!("Your daily digest: {count} things to look at"),
    };
    let mut text = String::new();
    for one in told {
        text.push_str(&format!(
            "{}\n{}\n{}: {}\n\n",
            one.headline(),
            facts_text(one),
            one.action(),
            one.link
        ));
    }
    let mut why: Vec<&str> = told.iter().map(|one| one.why.as_str()).collect();
    why.sort_unstable();
    why.dedup();
    text.push_str(&footer_text(&why, organization, settings));
    let html = page(
        &subject,
        html! {
            h1 style="font-size:20px;margin:0 0 12px" { "Your daily digest" }
            @for one in told {
                h2 style="font-size:17px;margin:20px 0 8px" { (one.headline()) }
                (facts_html(one))
                (button(one))
            }
        },
        &why,
        organization,
        settings,
    );
    Letter { subject, text, html }
}

/// A chat message telling `told`: the headline, the facts and the link.
pub(crate) fn chat_text(told: &Told<'_>) -> String {
    format!(
        "{}\n{}\n{}: {}",
        told.headline(),
        facts_text(told),
        told.action(),
        told.link
    )
}

fn facts_text(told: &Told<'_>) -> String {
    told.facts()
        .into_iter()
        .map(|(label, value)| format!("{label}: {value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn footer_text(why: &[&str], organization: &str, settings: &str) -> String {
    format!(
        "--\nYou get this from {organization} because {}.\nChoose what you hear of: {settings}\n",
        why.join("; ")
    )
}

fn facts_html(told: &Told<'_>) -> Markup {
    html! {
        table role="presentation" style="border-collapse:collapse;margin:0 0 16px" {
            @for (label, value) in told.facts() {
                tr {
                    th scope="row" style="text-align:left;padding:4px 16px 4px 0;color:#555;font-weight:normal;vertical-align:top" { (label) }
                    td style="padding:4px 0" { (value) }
                }
            }
        }
    }
}

fn button(told: &Told<'_>) -> Markup {
    html! {
        p { a href=(told.link) style="display:inline-block;background:#1d4ed8;color:#fff;padding:10px 16px;border-radius:6px;text-decoration:none" { (told.action()) } }
    }
}

fn page(subject: &str, content: Markup, why: &[&str], organization: &str, settings: &str) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (subject) } }
            body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#111;max-width:600px;margin:0 auto;padding:16px" {
                (content)
                hr style="border:none;border-top:1px solid #ddd;margin:24px 0 12px";
                p style="font-size:13px;color:#555" {
                    "You get this from " (organization) " because " (why.join("; ")) ". "
                    a href=(settings) { "Choose what you hear of" } "."
                }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use agentprocess_engine::{Assignee, Run, StepRun, WorkItem};
    use agentprocess_store::StoredVersion;

    use super::*;

    const SOURCE: &str = "---
name: vendor
description: Finance approves a vendor.
inputs:
  vendorName: string
  expectedAnnualSpend: number
  notes:
    type: string
    optional: true
steps:
  - id: finance_approval
    person: finance
    approve: Check the expected annual spend.
    due: 1h
  - id: done
    finish: approved
---
# Vendor

## Finance approval

Check the vendor name and the expected annual spend.
";

    fn version() -> ProcessVersion {
        crate::versions::parsed(&StoredVersion {
            process: "vendor".to_owned(),
            number: 3,
            content_hash: String::new(),
            source: SOURCE.to_owned(),
            roles: r#"{"finance": "finance"}"#.to_owned(),
            agents: "{}".to_owned(),
            published_at: 0,
        })
        .expect("a version")
    }

    fn run() -> Run {
        let at = jiff::Timestamp::from_second(1_800_000_000).expect("a time");
        let mut approval = StepRun::new("finance_approval");
        approval.due_at = Some(at);
        approval.work_item = Some(WorkItem {
            id: "wi_1".to_owned(),
            assigned_to: Assignee::Group("finance".to_owned()),
            created_at: at,
            escalation: None,
        });
        Run {
            initiator: Some("ann@x.test".to_owned()),
            inputs: serde_json::from_str(r#"{"vendorName": "Acme <Tools>", "expectedAnnualSpend": 42000.50}"#)
                .expect("inputs"),
            ..Run::new(
                "r_1",
                ("vendor", 3),
                "ann@x.test",
                at,
                vec![approval, StepRun::new("done")],
            )
        }
    }

    fn told<'a>(run: &'a Run, version: &'a ProcessVersion, kind: MessageKind, reminder: bool) -> Told<'a> {
        Told {
            kind,
            reminder,
            run,
            version,
            step: Some("finance_approval"),
            link: "https://p.test/runs/r_1/items/wi_1".to_owned(),
            why: "you are in the finance group".to_owned(),
        }
    }

    #[test]
    fn a_letter_says_what_the_step_is_about_and_links_to_it_in_text_and_html() {
        let (run, version) = (run(), version());
        let one = letter(
            &told(&run, &version, MessageKind::Waiting, false),
            "Acme",
            "https://p.test/account#messages",
        );
        assert_eq!(one.subject, "Finance approval waits for you · vendor v3");
        for line in [
            "Process: vendor v3",
            "Vendor name: Acme <Tools>",
            "Expected annual spend: 42000.50",
            "Due: 2027-01-15 08:00 UTC",
            "Open the work item: https://p.test/runs/r_1/items/wi_1",
            "You get this from Acme because you are in the finance group.",
            "Choose what you hear of: https://p.test/account#messages",
        ] {
            assert!(one.text.contains(line), "{line:?} in {}", one.text);
        }
        assert!(
            !one.text.contains("Notes"),
            "an input the step does not name is left out"
        );
        assert!(one.html.contains("Acme &lt;Tools&gt;"), "escaped: {}", one.html);
        assert!(one.html.contains(r#"href="https://p.test/runs/r_1/items/wi_1""#));
        let reminder = letter(&told(&run, &version, MessageKind::Overdue, true), "Acme", "s");
        assert!(
            reminder
                .subject
                .starts_with("Reminder: Finance approval is still overdue")
        );
    }

    #[test]
    fn a_digest_lists_each_thing_once_under_one_subject() {
        let (run, version) = (run(), version());
        let both = [
            told(&run, &version, MessageKind::Waiting, false),
            told(&run, &version, MessageKind::Overdue, false),
        ];
        let digested = digest(&both, "Acme", "s");
        assert_eq!(digested.subject, "Your daily digest: 2 things to look at");
        assert!(digested.text.contains("Finance approval waits for you"));
        assert!(digested.text.contains("Finance approval is overdue"));
        assert_eq!(digested.text.matches("because you are in the finance group").count(), 1);
        assert_eq!(digested.html.matches("<h2").count(), 2);
    }
}
