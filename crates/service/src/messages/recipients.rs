//! Who hears of a notification: a work item's group or person, the operators, the
//! run's initiator; by email each as they chose, and the chat hooks of the groups
//! concerned.

use agentprocess_engine::{Assignee, Run};
use agentprocess_store::{Channel, Identity, NewMessage, Role};
use serde_json::Value;

use super::choices::{Choice, Chosen, MessageKind};

/// What the recipients of one notification are worked out from.
pub(crate) struct Audience<'a> {
    /// The organization's identities.
    pub(crate) identities: &'a [Identity],
    /// What they chose.
    pub(crate) chosen: &'a Chosen,
    /// The groups with a chat hook.
    pub(crate) chat_groups: &'a [String],
    /// The group escalations go to: the operators.
    pub(crate) operators_group: &'a str,
    /// Now, in milliseconds.
    pub(crate) now: i64,
}

/// The kind of message an event makes, if people hear of it.
pub(crate) fn kind_of(event: &str) -> Option<MessageKind> {
    match event {
        "work_item.created" => Some(MessageKind::Waiting),
        "step.overdue" => Some(MessageKind::Overdue),
        "escalation.waiting" => Some(MessageKind::Escalation),
        "run.ended" => Some(MessageKind::Ended),
        _ => None,
    }
}

/// The work item's assignee in a notification's body, if it names one.
pub(crate) fn assignee_in(body: &Value) -> Option<Assignee> {
    serde_json::from_value(body.get("workItem")?.get("assignedTo")?.clone()).ok()
}

impl Audience<'_> {
    /// The messages a notification makes: one per person who hears of it (as they
    /// chose) and one per chat hook of a group concerned.
    pub(crate) fn messages(&self, kind: MessageKind, body: &Value, run: Option<&Run>) -> Vec<NewMessage> {
        let assignee = assignee_in(body);
        let mut people: Vec<&Identity> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        match kind {
            MessageKind::Waiting => {
                if let Some(assignee) = &assignee {
                    people.extend(self.assigned(assignee));
                    groups.extend(group_of(assignee));
                }
            }
            MessageKind::Overdue => {
                if let Some(assignee) = &assignee {
                    people.extend(self.assigned(assignee));
                    groups.extend(group_of(assignee));
                }
                people.extend(self.operators());
                groups.push(self.operators_group);
            }
            MessageKind::Escalation => {
                people.extend(self.operators());
                groups.push(self.operators_group);
            }
            MessageKind::Ended => {
                let initiator = run.and_then(|run| run.initiator.as_deref());
                people.extend(initiator.and_then(|person| self.person(person)));
            }
        }
        people.sort_by(|a, b| a.id.cmp(&b.id));
        people.dedup_by(|a, b| a.id == b.id);
        groups.sort_unstable();
        groups.dedup();
        let mut messages: Vec<NewMessage> = people
            .into_iter()
            .filter_map(|identity| {
                let choice = self.chosen.choice(&identity.id, kind);
                let digest = match choice {
                    Choice::Off => return None,
                    Choice::Daily => true,
                    Choice::Immediately => false,
                };
                Some(NewMessage {
                    channel: Channel::Email,
                    recipient: identity.id.clone(),
                    kind: kind.as_str().to_owned(),
                    digest,
                    next_at: if digest {
                        self.chosen.organization.next_digest(self.now)
                    } else {
                        self.now
                    },
                })
            })
            .collect();
        messages.extend(
            groups
                .into_iter()
                .filter(|group| self.chat_groups.iter().any(|hooked| hooked == group))
                .map(|group| NewMessage {
                    channel: Channel::Chat,
                    recipient: group.to_owned(),
                    kind: kind.as_str().to_owned(),
                    digest: false,
                    next_at: self.now,
                }),
        );
        messages
    }

    /// The people an item assigned so may decide it.
    fn assigned(&self, assignee: &Assignee) -> Vec<&Identity> {
        self.people()
            .filter(|identity| assigned_because(identity, assignee, self.operators_group).is_some())
            .collect()
    }

    fn people(&self) -> impl Iterator<Item = &Identity> {
        self.identities.iter().filter(|identity| {
            identity.role.is_some() && identity.deactivated_at.is_none() && identity.person.is_some()
        })
    }

    fn operators(&self) -> impl Iterator<Item = &Identity> {
        self.people().filter(|identity| identity.has_role(Role::Operator))
    }

    fn person(&self, person: &str) -> Option<&Identity> {
        self.people().find(|identity| {
            identity
                .person
                .as_deref()
                .is_some_and(|held| held.eq_ignore_ascii_case(person))
        })
    }
}

/// Why `identity` may decide an item assigned to `assignee` (the group of escalations
/// is the operators), in words; `None` when they may not. Asked when a notification is
/// handed over and again when its message is sent.
pub(crate) fn assigned_because(identity: &Identity, assignee: &Assignee, operators_group: &str) -> Option<String> {
    match assignee {
        Assignee::Person(person) => identity
            .person
            .as_deref()
            .is_some_and(|held| held.eq_ignore_ascii_case(person))
            .then(|| "the work item is assigned to you".to_owned()),
        Assignee::Group(group) if group == operators_group => identity
            .has_role(Role::Operator)
            .then(|| "you are an operator".to_owned()),
        Assignee::Group(group) => identity
            .groups
            .iter()
            .any(|held| held == group)
            .then(|| format!("you are in the {group} group")),
    }
}

fn group_of(assignee: &Assignee) -> Option<&str> {
    match assignee {
        Assignee::Group(group) => Some(group),
        Assignee::Person(_) => None,
    }
}
