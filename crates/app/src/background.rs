//! The work a process does beside answering requests.

use std::sync::Arc;

use agentprocess_service::Service;

/// The background work of a process: firing timers and delivering webhooks.
#[derive(Debug, Clone, Default)]
pub struct Background {
    /// How timers are fired.
    pub scheduler: agentprocess_service::SchedulerSettings,
    /// How webhooks are delivered (and messages to people retried).
    pub webhooks: agentprocess_service::WebhookSettings,
    /// How email is sent; `None` sends none (chat hooks still get their messages).
    pub mail: Option<agentprocess_service::MailSettings>,
}

/// Starts the timer loop, the reconciler (with a timer queue), the webhook loop, the
/// loop of messages to people and the sampler of the work gauges; each stops when `stop` is cancelled, after
/// finishing what it has under way.
pub fn spawn_background(
    service: &Arc<Service>,
    background: &Background,
    stop: &tokio_util::sync::CancellationToken,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(Arc::clone(service).run_scheduler(background.scheduler.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_reconciler(background.scheduler.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_webhooks(background.webhooks.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_messages(background.webhooks.clone(), background.mail.clone(), stop.clone()));
    tasks.spawn(Arc::clone(service).run_gauges(stop.clone()));
    tasks
}
