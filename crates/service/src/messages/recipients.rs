//! Who hears of a notification: a work item's group or person (less whoever the
//! organization's policies keep from deciding it), the operators, the run's initiator;
//! by email each as they chose, and the chat hooks of the groups concerned.

use agentprocess_engine::{Assignee, ProcessVersion, Run};
use agentprocess_store::{Channel, Identity, NewMessage, Role};
use serde_json::Value;

use super::choices::{Choice, Chosen, MessageKind};
use crate::Policies;

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
    /// The organization's policies of who decides.
    pub(crate) policies: &'a Policies,
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

/// The work item a message is about: to whom it is assigned and, to read the
/// organization's policies against, its id and the run it is open in.
pub(crate) struct Item<'a> {
    assignee: Assignee,
    id: Option<String>,
    /// The run as it is now, with its version; `None` when it was not read.
    run: Option<(&'a Run, &'a ProcessVersion)>,
    policies: &'a Policies,
}

impl<'a> Item<'a> {
    /// The item a notification's `body` names, if it names one, read against `run` (as
    /// it is now) under `policies`.
    pub(crate) fn of(body: &Value, run: Option<(&'a Run, &'a ProcessVersion)>, policies: &'a Policies) -> Option<Self> {
        let item = body.get("workItem")?;
        Some(Self {
            assignee: serde_json::from_value(item.get("assignedTo")?.clone()).ok()?,
            id: item.get("id").and_then(Value::as_str).map(str::to_owned),
            run,
            policies,
        })
    }

    /// Why `identity` may decide the item (the group of escalations is the operators), in
    /// words; `None` when they may not: it is not assigned to them, or a policy keeps
    /// them from it ([`Policies::keeps`], the rule `decide` keeps). Asked when a
    /// notification is handed over and again when its message is sent.
    pub(crate) fn decider_because(&self, identity: &Identity, operators_group: &str) -> Option<String> {
        let why = assigned_because(identity, &self.assignee, operators_group)?;
        let kept = match (self.id.as_deref(), self.run, identity.person.as_deref()) {
            (Some(id), Some((run, version)), Some(person)) => self.policies.keeps(run, version, id, person).is_some(),
            _ => false,
        };
        (!kept).then_some(why)
    }
}

impl Audience<'_> {
    /// The messages a notification makes: one per person who hears of it (as they
    /// chose) and one per chat hook of a group concerned. `run` is the run as it is
    /// now, read for a run's end and while a policy is on.
    pub(crate) fn messages(
        &self,
        kind: MessageKind,
        body: &Value,
        run: Option<(&Run, &ProcessVersion)>,
    ) -> Vec<NewMessage> {
        let item = Item::of(body, run, self.policies);
        let mut people: Vec<&Identity> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        match kind {
            MessageKind::Waiting => {
                if let Some(item) = &item {
                    people.extend(self.deciders(item));
                    groups.extend(group_of(&item.assignee));
                }
            }
            MessageKind::Overdue => {
                if let Some(item) = &item {
                    people.extend(self.deciders(item));
                    groups.extend(group_of(&item.assignee));
                }
                people.extend(self.operators());
                groups.push(self.operators_group);
            }
            MessageKind::Escalation => {
                people.extend(self.operators());
                groups.push(self.operators_group);
            }
            MessageKind::Ended => {
                let initiator = run.and_then(|(run, _)| run.initiator.as_deref());
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

    /// The people who may decide `item`.
    fn deciders(&self, item: &Item<'_>) -> Vec<&Identity> {
        self.people()
            .filter(|identity| item.decider_because(identity, self.operators_group).is_some())
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

/// Why `identity` is among those an item is assigned to (the group of escalations is
/// the operators), in words; `None` when they are not.
fn assigned_because(identity: &Identity, assignee: &Assignee, operators_group: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::tests::{ALL, run, version};
    use agentprocess_store::IdentityKind;

    fn member(id: &str, role: Role, groups: &[&str]) -> Identity {
        Identity {
            org: "acme".to_owned(),
            id: id.to_owned(),
            kind: IdentityKind::Person,
            role: Some(role),
            person: Some(format!("{id}@x.test")),
            name: id.to_owned(),
            groups: groups.iter().map(|group| (*group).to_owned()).collect(),
            deactivated_at: None,
        }
    }

    /// Who of ann (who started the run), pat (who completed its task), bob (who decided
    /// its first approval), eve and the operator ops hears of the second approval.
    fn told(policies: &Policies, kind: MessageKind) -> Vec<String> {
        let identities = [
            member("ann", Role::Member, &["approvers"]),
            member("pat", Role::Member, &["approvers"]),
            member("bob", Role::Member, &["approvers"]),
            member("eve", Role::Member, &["approvers"]),
            member("ops", Role::Operator, &[]),
        ];
        let chosen = Chosen::default();
        let audience = Audience {
            identities: &identities,
            chosen: &chosen,
            chat_groups: &[],
            operators_group: "operators",
            policies,
            now: 0,
        };
        let body = serde_json::json!({ "step": "second_approval",
                                        "workItem": { "id": "wi_2", "assignedTo": { "group": "approvers" } } });
        let (run, version) = (run(), version());
        audience
            .messages(kind, &body, Some((&run, &version)))
            .into_iter()
            .map(|message| message.recipient)
            .collect()
    }

    #[test]
    fn whoever_a_policy_keeps_from_an_item_is_not_told_it_waits_for_them() {
        assert_eq!(told(&ALL, MessageKind::Waiting), ["eve"]);
        assert_eq!(
            told(&ALL, MessageKind::Overdue),
            ["eve", "ops"],
            "the operators hear as operators"
        );
        assert_eq!(
            told(&Policies::default(), MessageKind::Waiting),
            ["ann", "bob", "eve", "pat"]
        );
    }
}
