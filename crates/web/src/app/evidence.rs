//! Evidence as pages show it: each file with the name, size and media type of its
//! upload, its SHA-256 and a download link, and a preview of the types downloads show
//! inline; each link as a link.

use agentprocess_format::EvidenceKind;
use agentprocess_store::{Store, Upload};
use agentprocess_views::{EvidenceView, RunView};
use maud::{Markup, html};

use crate::session::Web;

/// What a page shows beside the run: the evidence files it cites, with their records.
pub(crate) struct Files(Vec<(String, Upload)>);

impl Files {
    pub(crate) fn of(&self, reference: &str) -> Option<&Upload> {
        self.0.iter().find(|(id, _)| id == reference).map(|(_, upload)| upload)
    }
}

/// The file evidence `run` cites, with each upload's record.
pub(crate) async fn files(web: &Web, org: &str, run: &RunView) -> Files {
    // Collected before the first await, so no borrow of the view is held across it.
    let mut cited: Vec<String> = run
        .data
        .steps
        .values()
        .flat_map(|data| data.history.iter().chain(data.current.iter()))
        .flat_map(|record| record.evidence.iter().flatten())
        .filter(|item| item.kind == EvidenceKind::File)
        .map(|item| item.reference.clone())
        .collect();
    cited.sort_unstable();
    cited.dedup();
    let mut found = Vec::new();
    for reference in cited {
        // A record that cannot be read now only loses its name and size on the page.
        if let Ok(Some(upload)) = web.service.store().upload(org, &reference).await {
            found.push((reference, upload));
        }
    }
    Files(found)
}

/// A file's size as people read it.
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// One evidence item, with its upload's record when it is a file.
pub(crate) fn evidence(item: &EvidenceView, upload: Option<&Upload>) -> Markup {
    let name = upload.map_or(item.reference.as_str(), |upload| upload.file_name.as_str());
    let kind = upload.map_or("", |upload| upload.content_type.as_str());
    html! {
        div class="preview" {
            @if item.kind == EvidenceKind::Link {
                // Only a web URL is a link; a document number, or a ref stored before
                // links were checked, is text.
                @if agentprocess_engine::is_web_link(&item.reference) {
                    p { "Link: " a href=(item.reference) rel="noopener noreferrer" { (item.reference) } }
                } @else {
                    p { "Link: " code { (item.reference) } }
                }
            } @else {
                p {
                    "File: "
                    @if let Some(url) = &item.url { a href=(url) { (name) } } @else { (name) }
                    @if let Some(upload) = upload { " · " (size(upload.bytes)) " · " (upload.content_type) }
                    @if let Some(sha256) = &item.sha256 { br; small { "SHA-256 " code { (sha256) } } }
                }
                // Only the types downloads show inline are previewed; the rest are links.
                @if let Some(url) = item.url.as_ref().filter(|_| crate::INLINE_TYPES.contains(&kind)) {
                    @if kind.starts_with("image/") { img src=(format!("{url}&inline=1")) alt=(format!("Preview of {name}")); }
                    @if kind == "application/pdf" {
                        iframe src=(format!("{url}&inline=1")) title=(format!("Preview of {name}")) {}
                    }
                }
            }
        }
    }
}
