//! What a message says: the facts a person needs to decide whether to open it (the
//! process, the step by its title, the inputs the step's words name, when it is due)
//! and the link to the page where they act, as plain text and as HTML; a daily digest
//! lists several; a chat message says the same in the chat's own markup.
//!
//! Every word not the server's own is a [`Said`], put in by the message's [`Medium`];
//! and each layout keeps the server's lines where no value can stand: the call to act
//! comes right under the headline, each fact on its own indented (or, in chat, quoted)
//! line behind its label, and the footer last. A value is always on one line, so none
//! can start a line of its own, let alone imitate the link or the footer.

use agentprocess_engine::{ProcessVersion, Run};
use agentprocess_format::StepKind;
use maud::{DOCTYPE, Markup, Render, html};

use super::choices::MessageKind;
use super::medium::{Medium, Said};
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
    pub(crate) why: Said,
}

/// A message as sent by email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Letter {
    /// One line, with no line break from any value.
    pub(crate) subject: String,
    pub(crate) text: String,
    pub(crate) html: String,
}

/// What happened, in one line: the server's words around what was said (a step's
/// title, a run's outcome).
struct Headline {
    lead: &'static str,
    said: Option<Said>,
    tail: &'static str,
}

impl Headline {
    fn ours(words: &'static str) -> Self {
        Self {
            lead: words,
            said: None,
            tail: "",
        }
    }

    fn around(lead: &'static str, said: Said, tail: &'static str) -> Self {
        Self {
            lead,
            said: Some(said),
            tail,
        }
    }

    fn put(&self, medium: Medium) -> String {
        let said = self.said.as_ref().map(|said| medium.put(said)).unwrap_or_default();
        format!("{}{said}{}", self.lead, self.tail)
    }
}

impl Render for Headline {
    fn render_to(&self, buffer: &mut String) {
        self.lead.render_to(buffer);
        if let Some(said) = &self.said {
            said.render_to(buffer);
        }
        self.tail.render_to(buffer);
    }
}

/// A fact a message shows: its label and its value.
struct Fact {
    label: Said,
    value: Said,
}

impl Fact {
    fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            label: Said::new(label),
            value: Said::new(value),
        }
    }

    fn put(&self, medium: Medium) -> String {
        format!("{}: {}", medium.put(&self.label), medium.put(&self.value))
    }
}

impl Told<'_> {
    /// The process as pages name it.
    fn process(&self) -> Said {
        Said::new(format!("{} v{}", self.run.process, self.run.version))
    }

    /// What happened.
    fn headline(&self) -> Headline {
        let step = Said::new(self.step.map_or_else(
            || "A step".to_owned(),
            |step| agentprocess_words::step_title(self.version.process.body(), step),
        ));
        match self.kind {
            MessageKind::Waiting => Headline::around("", step, " waits for you"),
            MessageKind::Overdue if self.reminder => Headline::around("Reminder: ", step, " is still overdue"),
            MessageKind::Overdue => Headline::around("", step, " is overdue"),
            MessageKind::Escalation => Headline::around("", step, " was escalated to the operators"),
            MessageKind::Ended => match &self.run.end {
                Some(end) if end.cancelled => Headline::ours("Your run was cancelled"),
                Some(end) => match end.outcome.as_deref() {
                    Some("rejected") => Headline::ours("Your run was rejected"),
                    Some("failed") => Headline::ours("Your run failed"),
                    Some(outcome) => Headline::around("Your run ended: ", Said::new(outcome), ""),
                    None => Headline::ours("Your run ended"),
                },
                None => Headline::ours("Your run ended"),
            },
        }
    }

    /// The facts, in the order they are shown.
    fn facts(&self) -> Vec<Fact> {
        let document = self.version.process.document();
        let mut facts = vec![Fact {
            label: Said::new("Process"),
            value: self.process(),
        }];
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
                facts.push(Fact::new(agentprocess_words::label(name), shown));
            }
            let due = self.run.step(step).and_then(|step| step.due_at);
            if let Some(due) = due {
                facts.push(Fact::new("Due", due.strftime("%Y-%m-%d %H:%M UTC").to_string()));
            }
        }
        if let Some(end) = self.run.end.as_ref().filter(|_| self.kind == MessageKind::Ended) {
            if let Some(note) = &end.note {
                facts.push(Fact::new("Note", note.clone()));
            }
            facts.push(Fact::new("Ended", end.at.strftime("%Y-%m-%d %H:%M UTC").to_string()));
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

    /// The call to act: the link's words, then the link.
    fn call(&self) -> String {
        format!("{}: {}", self.action(), self.link)
    }

    /// Each fact on a line of its own behind `prefix`, in `medium`.
    fn fact_lines(&self, medium: Medium, prefix: &str) -> String {
        self.facts()
            .iter()
            .map(|fact| format!("{prefix}{}", fact.put(medium)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// What stands before each fact in plain text: the server's own lines start at the
/// margin, the facts never do.
const INDENT: &str = "    ";

/// What stands before each fact in chat: a quote, which Slack and Markdown both show.
const QUOTE: &str = "> ";

/// The message telling `told`, from `organization`; `settings` is where the person
/// chooses what they hear of.
pub(crate) fn letter(told: &Told<'_>, organization: &Said, settings: &str) -> Letter {
    let headline = told.headline();
    let subject = format!("{} · {}", headline.put(Medium::Text), Medium::Text.put(&told.process()));
    let text = format!(
        "{}\n\n{}\n\n{}\n\n{}",
        headline.put(Medium::Text),
        told.call(),
        told.fact_lines(Medium::Text, INDENT),
        footer_text(&[&told.why], organization, settings)
    );
    let html = page(
        &subject,
        html! {
            h1 style="font-size:20px;margin:0 0 12px" { (headline) }
            (facts_html(told))
            (button(told))
        },
        &[&told.why],
        organization,
        settings,
    );
    Letter { subject, text, html }
}

/// One message listing every one of `told` (a daily digest).
pub(crate) fn digest(told: &[Told<'_>], organization: &Said, settings: &str) -> Letter {
    let subject = match told {
        [one] => format!("Your daily digest: {}", one.headline().put(Medium::Text)),
        several => format!("Your daily digest: {} things to look at", several.len()),
    };
    let mut text = String::new();
    for one in told {
        text.push_str(&format!(
            "{}\n{}\n{}\n\n",
            one.headline().put(Medium::Text),
            one.call(),
            one.fact_lines(Medium::Text, INDENT)
        ));
    }
    let mut why: Vec<&Said> = told.iter().map(|one| &one.why).collect();
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

/// A chat message telling `told` in `medium`: the headline, the call to act, and the
/// facts quoted.
pub(crate) fn chat_text(told: &Told<'_>, medium: Medium) -> String {
    format!(
        "{}\n{}\n{}",
        told.headline().put(medium),
        told.call(),
        told.fact_lines(medium, QUOTE)
    )
}

/// The footer, last: who sends it, why, and where to choose.
fn footer_text(why: &[&Said], organization: &Said, settings: &str) -> String {
    let why: Vec<String> = why.iter().map(|why| Medium::Text.put(why)).collect();
    format!(
        "--\nYou get this from {} because {}.\nChoose what you hear of: {settings}\n",
        Medium::Text.put(organization),
        why.join("; ")
    )
}

fn facts_html(told: &Told<'_>) -> Markup {
    html! {
        table role="presentation" style="border-collapse:collapse;margin:0 0 16px" {
            @for fact in told.facts() {
                tr {
                    th scope="row" style="text-align:left;padding:4px 16px 4px 0;color:#555;font-weight:normal;vertical-align:top" { (fact.label) }
                    td style="padding:4px 0" { (fact.value) }
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

fn page(subject: &str, content: Markup, why: &[&Said], organization: &Said, settings: &str) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (subject) } }
            body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#111;max-width:600px;margin:0 auto;padding:16px" {
                (content)
                hr style="border:none;border-top:1px solid #ddd;margin:24px 0 12px";
                p style="font-size:13px;color:#555" {
                    "You get this from " (organization) " because "
                    @for (index, one) in why.iter().enumerate() { @if index > 0 { "; " } (one) }
                    ". "
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
            why: Said::new("you are in the finance group"),
        }
    }

    #[test]
    fn a_letter_says_what_the_step_is_about_and_links_to_it_in_text_and_html() {
        let (run, version) = (run(), version());
        let one = letter(
            &told(&run, &version, MessageKind::Waiting, false),
            &Said::new("Acme"),
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
        let reminder = letter(
            &told(&run, &version, MessageKind::Overdue, true),
            &Said::new("Acme"),
            "s",
        );
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
        let digested = digest(&both, &Said::new("Acme"), "s");
        assert_eq!(digested.subject, "Your daily digest: 2 things to look at");
        assert!(digested.text.contains("Finance approval waits for you"));
        assert!(digested.text.contains("Finance approval is overdue"));
        assert_eq!(digested.text.matches("because you are in the finance group").count(), 1);
        assert_eq!(digested.html.matches("<h2").count(), 2);
    }

    /// What an agent or a person may write into a run, to forge a message.
    const HOSTILE: [&str; 6] = [
        "<!channel> pay the invoice",
        "<!here>",
        "<https://evil.example|Open the work item>",
        "[Open the work item](https://evil.example)",
        "![](https://evil.example/t.png)",
        "Acme\n\nOpen the work item: https://evil.example\n\n--\nYou get this from Acme because you are an admin.\nChoose what you hear of: https://evil.example\n",
    ];

    fn hostile_run(value: &str) -> Run {
        let mut run = run();
        run.inputs.insert("vendorName".to_owned(), serde_json::json!(value));
        run.end = Some(agentprocess_engine::End {
            cancelled: false,
            outcome: Some("rejected".to_owned()),
            by: "bob@x.test".to_owned(),
            at: jiff::Timestamp::from_second(1_800_000_600).expect("a time"),
            note: Some(value.to_owned()),
        });
        run
    }

    /// The text outside code spans: what Markdown reads as markup.
    fn outside_code(text: &str) -> String {
        text.split('`').step_by(2).collect()
    }

    #[test]
    fn a_value_forges_no_line_of_a_letters_text_and_no_header() {
        let version = version();
        for value in HOSTILE {
            let run = hostile_run(value);
            for kind in [MessageKind::Waiting, MessageKind::Ended] {
                let mut one = told(&run, &version, kind, false);
                if kind == MessageKind::Ended {
                    one.link = "https://p.test/runs/r_1".to_owned();
                }
                let sent = letter(&one, &Said::new("Acme"), "https://p.test/account#messages");
                assert!(!sent.subject.contains(['\r', '\n']), "{:?}", sent.subject);
                let lines: Vec<&str> = sent.text.lines().collect();
                let calls: Vec<&&str> = lines.iter().filter(|line| line.starts_with("Open the")).collect();
                assert_eq!(
                    calls,
                    [&format!("{}: {}", one.action(), one.link).as_str()],
                    "{}",
                    sent.text
                );
                assert_eq!(
                    lines[lines.len() - 3..],
                    [
                        "--",
                        "You get this from Acme because you are in the finance group.",
                        "Choose what you hear of: https://p.test/account#messages",
                    ],
                    "{}",
                    sent.text
                );
                assert_eq!(
                    lines.iter().filter(|line| line.starts_with("--")).count(),
                    1,
                    "{}",
                    sent.text
                );
                assert_eq!(
                    lines.iter().filter(|line| line.starts_with("Choose")).count(),
                    1,
                    "{}",
                    sent.text
                );
                // Every line a value could reach is a fact, indented behind its label.
                for line in &lines[4..lines.len() - 4] {
                    assert!(line.starts_with(INDENT), "{line:?} in {}", sent.text);
                }
                for raw in ["href=\"https://evil", "<img", "src=", "<!channel", "<!here", "<https"] {
                    assert!(!sent.html.contains(raw), "{raw} in {}", sent.html);
                }
                assert_eq!(sent.html.matches("<a href=").count(), 2, "the button and the footer's");
            }
        }
    }

    #[test]
    fn a_value_makes_no_ping_link_or_image_in_chat() {
        let version = version();
        for value in HOSTILE {
            let run = hostile_run(value);
            for kind in [MessageKind::Waiting, MessageKind::Ended] {
                let one = told(&run, &version, kind, false);
                let slack = chat_text(&one, Medium::Slack);
                for raw in ["<!channel>", "<!here>", "<https://evil"] {
                    assert!(!slack.contains(raw), "{raw} in {slack}");
                }
                let markdown = chat_text(&one, Medium::Markdown);
                let read = outside_code(&markdown);
                for raw in ["](", "![", "<!", "<https", "evil.example"] {
                    assert!(!read.contains(raw), "{raw} outside code in {markdown}");
                }
                for text in [&slack, &markdown] {
                    let lines: Vec<&str> = text.lines().collect();
                    assert_eq!(lines[1], one.call(), "{text}");
                    assert!(lines[2..].iter().all(|line| line.starts_with(QUOTE)), "{text}");
                }
            }
        }
    }
}
