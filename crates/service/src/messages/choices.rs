//! What people hear of, and how: each kind of message immediately, in a daily digest,
//! or not at all; a person's own choice, else the organization's default. And the
//! organization's cadence of reminders and the hour of its digests.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a message tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    /// A work item waits for you (your group's, or assigned to you).
    Waiting,
    /// A work item you may decide is overdue; reminders follow while it stays so. The
    /// operators hear of every overdue step.
    Overdue,
    /// An escalation waits for the operators.
    Escalation,
    /// A run you started ended, was rejected or was cancelled.
    Ended,
}

impl MessageKind {
    /// Every kind, in the order pages list them.
    pub const ALL: [MessageKind; 4] = [
        MessageKind::Waiting,
        MessageKind::Overdue,
        MessageKind::Escalation,
        MessageKind::Ended,
    ];

    /// The name stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Waiting => "waiting",
            MessageKind::Overdue => "overdue",
            MessageKind::Escalation => "escalation",
            MessageKind::Ended => "ended",
        }
    }

    /// The kind a name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// What it tells, as a person reads it.
    pub fn described(self) -> &'static str {
        match self {
            MessageKind::Waiting => "A work item waits for you",
            MessageKind::Overdue => "A work item is overdue, and reminders while it stays so",
            MessageKind::Escalation => "An escalation waits for the operators",
            MessageKind::Ended => "A run you started ended",
        }
    }
}

/// How a person hears of one kind of message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// A message each time.
    Immediately,
    /// One message a day listing them all.
    Daily,
    /// None.
    Off,
}

impl Choice {
    /// Every choice, in the order pages offer them.
    pub const ALL: [Choice; 3] = [Choice::Immediately, Choice::Daily, Choice::Off];

    /// The name stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Immediately => "immediately",
            Choice::Daily => "daily",
            Choice::Off => "off",
        }
    }

    /// The choice a name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|choice| choice.as_str() == text)
    }
}

/// A choice for some kinds; a kind left out follows the level above (a person's: the
/// organization's default; the organization's: immediately).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Choices(pub BTreeMap<MessageKind, Choice>);

impl Choices {
    /// The choice for `kind`, if one was made.
    pub fn get(&self, kind: MessageKind) -> Option<Choice> {
        self.0.get(&kind).copied()
    }
}

/// The most hours between two reminders (a month).
pub const LONGEST_REMINDER_HOURS: u32 = 24 * 31;

/// An organization's settings of messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrgMessageSettings {
    /// What its people hear of unless they choose otherwise, by kind (`waiting`,
    /// `overdue`, `escalation`, `ended`); a kind left out is `immediately`.
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, Choice>)]
    pub defaults: Choices,
    /// Hours between reminders while a work item stays overdue; 0 sends none.
    #[serde(default = "daily")]
    #[schema(minimum = 0, maximum = 744)]
    pub remind_every_hours: u32,
    /// The hour of the day (UTC, 0–23) daily digests are sent.
    #[serde(default = "eight")]
    #[schema(minimum = 0, maximum = 23)]
    pub digest_hour_utc: u8,
}

fn daily() -> u32 {
    24
}

fn eight() -> u8 {
    8
}

impl Default for OrgMessageSettings {
    fn default() -> Self {
        Self {
            defaults: Choices::default(),
            remind_every_hours: daily(),
            digest_hour_utc: eight(),
        }
    }
}

impl OrgMessageSettings {
    /// Every issue with these settings, in words.
    pub fn issues(&self) -> Vec<String> {
        let mut issues = Vec::new();
        if self.remind_every_hours > LONGEST_REMINDER_HOURS {
            issues.push(format!(
                "remindEveryHours: at most {LONGEST_REMINDER_HOURS} (a month); 0 sends no reminders"
            ));
        }
        if self.digest_hour_utc > 23 {
            issues.push("digestHourUtc: an hour of the day, 0 to 23".to_owned());
        }
        issues
    }

    /// How `person` (their own choices) hears of `kind`.
    pub fn choice(&self, person: Option<&Choices>, kind: MessageKind) -> Choice {
        person
            .and_then(|choices| choices.get(kind))
            .or_else(|| self.defaults.get(kind))
            .unwrap_or(Choice::Immediately)
    }

    /// When the next digest after `now` (milliseconds) is sent.
    pub fn next_digest(&self, now: i64) -> i64 {
        const HOUR: i64 = 3_600_000;
        const DAY: i64 = 24 * HOUR;
        let today = now.div_euclid(DAY) * DAY + i64::from(self.digest_hour_utc.min(23)) * HOUR;
        if today > now { today } else { today + DAY }
    }
}

/// Every organization's and person's choices as stored, by identity id (the
/// organization's under `""`).
#[derive(Debug, Default)]
pub(crate) struct Chosen {
    pub(crate) organization: OrgMessageSettings,
    pub(crate) people: BTreeMap<String, Choices>,
}

impl Chosen {
    /// From the stored rows; a row that does not read is left out (and logged), so one
    /// bad row silences nobody else.
    pub(crate) fn read(org: &str, rows: BTreeMap<String, String>) -> Self {
        let mut chosen = Chosen::default();
        for (identity, text) in rows {
            if identity.is_empty() {
                match serde_json::from_str(&text) {
                    Ok(settings) => chosen.organization = settings,
                    Err(error) => tracing::warn!(%org, %error, "the organization's message settings do not read"),
                }
            } else {
                match serde_json::from_str(&text) {
                    Ok(choices) => {
                        chosen.people.insert(identity, choices);
                    }
                    Err(error) => tracing::warn!(%org, %identity, %error, "message choices do not read"),
                }
            }
        }
        chosen
    }

    /// How `identity` hears of `kind`.
    pub(crate) fn choice(&self, identity: &str, kind: MessageKind) -> Choice {
        self.organization.choice(self.people.get(identity), kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persons_choice_wins_over_the_organizations_and_immediately_is_the_last_word() {
        let organization = OrgMessageSettings {
            defaults: Choices([(MessageKind::Ended, Choice::Off)].into_iter().collect()),
            ..OrgMessageSettings::default()
        };
        let own = Choices([(MessageKind::Waiting, Choice::Daily)].into_iter().collect());
        assert_eq!(organization.choice(Some(&own), MessageKind::Waiting), Choice::Daily);
        assert_eq!(organization.choice(Some(&own), MessageKind::Ended), Choice::Off);
        assert_eq!(organization.choice(None, MessageKind::Overdue), Choice::Immediately);
    }

    #[test]
    fn the_next_digest_is_the_coming_digest_hour() {
        let settings = OrgMessageSettings::default();
        let day = 86_400_000;
        let eight = 8 * 3_600_000;
        assert_eq!(settings.next_digest(10 * day), 10 * day + eight);
        assert_eq!(settings.next_digest(10 * day + eight), 11 * day + eight);
        assert_eq!(settings.next_digest(10 * day + eight + 1), 11 * day + eight);
    }

    #[test]
    fn settings_read_with_defaults_and_name_what_is_out_of_range() {
        let read: OrgMessageSettings = serde_json::from_str(r#"{"defaults": {"ended": "off"}}"#).expect("reads");
        assert_eq!(read.remind_every_hours, 24);
        assert_eq!(read.digest_hour_utc, 8);
        let wrong = OrgMessageSettings {
            remind_every_hours: 10_000,
            digest_hour_utc: 24,
            ..OrgMessageSettings::default()
        };
        assert_eq!(wrong.issues().len(), 2);
        assert!(serde_json::from_str::<Choices>(r#"{"waiting": "weekly"}"#).is_err());
    }
}
