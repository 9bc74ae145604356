//! The inbox: the signed-in person's open work items (their groups' items, and
//! escalations for operators), newest due first.

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_store::Store;
use agentprocess_views::WorkEntry;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::Visitor;
use super::layout::page;
use crate::identity::{ApiError, Web};

/// How many items the inbox shows.
const SHOWN: u32 = 100;

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    process: Option<String>,
}

pub(super) async fn inbox<S, B>(
    State(web): State<Arc<Web<S, B>>>,
    Visitor { who, caller }: Visitor,
    Query(filter): Query<Filter>,
) -> Response
where
    S: Store + Clone + std::fmt::Debug,
    B: Blobs,
{
    let process = filter.process.filter(|process| !process.is_empty());
    let page_of_work = match web.service.get_work(&caller, SHOWN, None, process.clone()).await {
        Ok(page_of_work) => page_of_work,
        Err(error) => return ApiError::from_tool(error.into_tool_error()).into_response(),
    };
    let mut items: Vec<_> = page_of_work
        .items
        .into_iter()
        .filter_map(|entry| match entry {
            WorkEntry::Person(item) => Some(item),
            WorkEntry::Agent(_) => None,
        })
        .collect();
    // Newest due first; items with no due date after those with one.
    items.sort_by(|a, b| match (a.work_item.due, b.work_item.due) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let now = web.service.now();
    let body = html! {
        form method="get" action="/inbox" {
            label for="process" { "Process" }
            input id="process" name="process" type="text" value=(process.as_deref().unwrap_or(""));
            button type="submit" { "Filter" }
        }
        @if items.is_empty() {
            p { "Nothing is waiting for you." }
        } @else {
            table {
                thead { tr { th scope="col" { "Process" } th scope="col" { "Step" } th scope="col" { "Asked" } th scope="col" { "Due" } } }
                tbody {
                    @for item in &items {
                        tr {
                            td { a href=(format!("/runs/{}", item.run_id)) { (item.process) " v" (item.version) }
                                 @if item.work_item.mode.is_some() { " " span class="badge test" { "test run" } } }
                            td { a href=(format!("/runs/{}/items/{}", item.run_id, item.work_item.id)) { (item.work_item.step_id) } }
                            td { (item.work_item.kind) }
                            td {
                                @if let Some(due) = item.work_item.due {
                                    @if due <= now { span class="badge overdue" { "overdue " (due) } }
                                    @else { span class="badge due" { (due) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    page(StatusCode::OK, "Inbox", Some(&who), body)
}
