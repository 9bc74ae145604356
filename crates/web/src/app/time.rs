//! Times as a person reads them: in their browser's time zone (the `tz` cookie the
//! page script sets), in UTC until the server knows it. Each is a `<time>` element
//! carrying the exact instant.

use axum::http::HeaderMap;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use maud::{Markup, html};

/// The name of the cookie that holds the browser's IANA time zone name.
const COOKIE: &str = "tz";

/// The time zone the `Cookie` headers name, or UTC when they name none this server
/// knows.
pub(crate) fn zone_of(headers: &HeaderMap) -> TimeZone {
    crate::cookies::cookie_value(headers, COOKIE)
        .and_then(|value| {
            let name = url::form_urlencoded::parse(format!("z={value}").as_bytes())
                .next()
                .map(|(_, name)| name.into_owned())?;
            TimeZone::get(&name).ok()
        })
        .unwrap_or(TimeZone::UTC)
}

/// `at` as a `<time>` element, written in `zone`: `2027-01-31 17:00 CET`.
pub(crate) fn when(zone: &TimeZone, at: Timestamp) -> Markup {
    let local = at.to_zoned(zone.clone());
    html! {
        time datetime=(at.to_string()) { (local.strftime("%Y-%m-%d %H:%M %Z")) }
    }
}

/// A time the store keeps in epoch milliseconds, as [`when`] writes it.
pub(crate) fn at_millis(zone: &TimeZone, millis: i64) -> Markup {
    when(zone, Timestamp::from_millisecond(millis).unwrap_or_default())
}

/// How long from `since` to `now`, in the largest whole unit: `5 minutes`, `3 hours`,
/// `2 days`; `moments` under a minute.
pub(crate) fn how_long(since: Timestamp, now: Timestamp) -> String {
    let minutes = now.as_second().saturating_sub(since.as_second()) / 60;
    let (count, unit) = match minutes {
        ..1 => return "moments".to_owned(),
        1..60 => (minutes, "minute"),
        60..1440 => (minutes / 60, "hour"),
        _ => (minutes / 1440, "day"),
    };
    format!("{count} {unit}{}", if count == 1 { "" } else { "s" })
}

/// The start of the day `date` (`2027-01-31`) in `zone`.
pub(crate) fn day_start(zone: &TimeZone, date: &str) -> Option<Timestamp> {
    let date: jiff::civil::Date = date.trim().parse().ok()?;
    date.to_zoned(zone.clone()).ok().map(|start| start.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, header};

    fn headers(cookie: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(cookie).expect("cookie"));
        headers
    }

    #[test]
    fn times_are_written_in_the_zone_the_cookie_names() {
        let at: Timestamp = "2027-01-31T16:00:00Z".parse().expect("time");
        let paris = zone_of(&headers("id=abc; tz=Europe%2FParis"));
        assert_eq!(
            when(&paris, at).into_string(),
            r#"<time datetime="2027-01-31T16:00:00Z">2027-01-31 17:00 CET</time>"#
        );
        let tokyo = zone_of(&headers("tz=Asia/Tokyo"));
        assert!(when(&tokyo, at).into_string().contains("2027-02-01 01:00 JST"));
    }

    #[test]
    fn spans_read_in_their_largest_unit_and_days_start_in_the_zone() {
        let at: Timestamp = "2027-01-31T16:00:00Z".parse().expect("time");
        let later = |seconds: i64| at.checked_add(jiff::SignedDuration::from_secs(seconds)).expect("time");
        assert_eq!(how_long(at, later(59)), "moments");
        assert_eq!(how_long(at, later(60)), "1 minute");
        assert_eq!(how_long(at, later(7_300)), "2 hours");
        assert_eq!(how_long(at, later(3 * 86_400 + 5)), "3 days");
        let paris = TimeZone::get("Europe/Paris").expect("zone");
        assert_eq!(
            day_start(&paris, "2027-01-31"),
            Some("2027-01-30T23:00:00Z".parse().expect("time"))
        );
        assert_eq!(day_start(&paris, "2027-02-30"), None);
    }

    #[test]
    fn an_unknown_or_missing_zone_is_utc() {
        let at: Timestamp = "2027-01-31T16:00:00Z".parse().expect("time");
        for cookie in ["tz=Mars%2FOlympus", "other=1", "tz="] {
            assert!(
                when(&zone_of(&headers(cookie)), at).into_string().contains("16:00 UTC"),
                "{cookie}"
            );
        }
        assert!(
            when(&zone_of(&HeaderMap::new()), at)
                .into_string()
                .contains("16:00 UTC")
        );
    }
}
