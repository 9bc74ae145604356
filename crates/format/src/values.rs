//! The text forms of names, step ids, `date`, `datetime` and `number` values, shared
//! by the format and the engine.

/// `YYYY-MM-DD` naming a real calendar date (proleptic Gregorian).
pub fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10 && b[4] == b'-' && b[7] == b'-' && real_date(&text[..4], &text[5..7], &text[8..10])
}

/// RFC 3339 `date-time`: a real date, `T`, `HH:MM:SS`, optional fraction, and an
/// offset (`Z` or `±HH:MM`). A leap second (`:60`) is accepted as RFC 3339 allows.
pub fn is_datetime(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else {
        return false;
    };
    if !is_date(date) || time.len() < 9 || !time.is_char_boundary(8) {
        return false;
    }
    let (clock, rest) = time.split_at(8);
    let c = clock.as_bytes();
    if c[2] != b':'
        || c[5] != b':'
        || !in_range(&clock[..2], 0, 23)
        || !in_range(&clock[3..5], 0, 59)
        || !in_range(&clock[6..8], 0, 60)
    {
        return false;
    }
    let offset = match rest.strip_prefix('.') {
        Some(fraction) => {
            let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            &fraction[digits..]
        }
        None => rest,
    };
    match offset {
        "Z" | "z" => true,
        _ => {
            let o = offset.as_bytes();
            o.len() == 6
                && (o[0] == b'+' || o[0] == b'-')
                && o[3] == b':'
                && in_range(&offset[1..3], 0, 23)
                && in_range(&offset[4..6], 0, 59)
        }
    }
}

/// Whether two JSON number texts name the same number (`1.50` and `1.5e0` do),
/// compared as decimals so that nothing is rounded.
pub fn same_number(a: &str, b: &str) -> bool {
    matches!((crate::number::normalize(a), crate::number::normalize(b)), (Some(x), Some(y)) if x == y)
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`: process names and `requires.systems`.
pub fn is_name(text: &str) -> bool {
    text.split('-')
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// The name pattern, as shown in issues.
pub const NAME_PATTERN: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";

/// Why `text` is not a name, in words, with the pattern and, when one is near, a
/// name that is (`"Supplier_Onboarding"` suggests `"supplier-onboarding"`).
pub fn name_issue(text: &str) -> String {
    let near: String = text
        .to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let such = if is_name(&near) && near.len() <= 64 {
        format!(", such as {near:?}")
    } else {
        String::new()
    };
    format!(
        "{text:?} is not a valid name: use 1–64 lowercase letters a–z and digits, with single \
         hyphens between words{such} ({NAME_PATTERN})"
    )
}

/// Why `text` is not a step id (or an event name: `what`), in words, with the pattern
/// and, when one is near, an id that is (`"Check Budget"` suggests `"check_budget"`).
pub fn step_id_issue(text: &str, what: &str) -> String {
    let lowered: String = text
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let near = lowered
        .trim_start_matches(|c: char| !c.is_ascii_lowercase())
        .trim_end_matches('_');
    let such = if is_step_id(near) {
        format!(", such as {near:?}")
    } else {
        String::new()
    };
    format!(
        "{text:?} is not a valid {what}: start with a lowercase letter a–z, then up to 63 lowercase \
         letters, digits, \"_\" or \"-\"{such} ({STEP_ID_PATTERN})"
    )
}

/// `^[a-z][a-z0-9_-]{0,63}$`: step ids and event names.
pub fn is_step_id(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..=64).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes[1..]
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The step id pattern, as shown in issues.
pub const STEP_ID_PATTERN: &str = "^[a-z][a-z0-9_-]{0,63}$";

fn real_date(year: &str, month: &str, day: &str) -> bool {
    let (Some(y), Some(m), Some(d)) = (digits(year), digits(month), digits(day)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn in_range(text: &str, low: u32, high: u32) -> bool {
    digits(text).is_some_and(|n| (low..=high).contains(&n))
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        assert!(same_number("1.50", "1.5"));
        assert!(same_number("100", "1e2"));
        assert!(same_number("-0", "0.0"));
        assert!(!same_number("1.5", "1.500000000000000001"));
        assert!(!same_number("1", "-1"));
        assert!(!same_number("x", "x"));
    }

    #[test]
    fn dates_must_be_real() {
        for ok in ["2026-10-06", "2024-02-29", "2000-02-29", "0001-01-01"] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in [
            "2026-02-29",
            "1900-02-29",
            "2026-13-01",
            "2026-04-31",
            "2026-1-01",
            "2026-10-06 ",
            "２０２６-10-06",
            "+026-10-06",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn datetimes_need_an_offset() {
        for ok in [
            "2026-10-06T09:00:00Z",
            "2026-10-06t09:00:00.123+02:00",
            "2026-12-31T23:59:60-05:30",
        ] {
            assert!(is_datetime(ok), "{ok}");
        }
        for bad in [
            "2026-10-06T09:00:00",
            "2026-10-06 09:00:00Z",
            "2026-10-06T24:00:00Z",
            "2026-10-06T09:00Z",
            "2026-10-06T09:00:00.Z",
            "2026-10-06T09:00:00+0200",
            "2026-02-30T09:00:00Z",
        ] {
            assert!(!is_datetime(bad), "{bad}");
        }
    }

    #[test]
    fn patterns() {
        for ok in ["a", "supplier-onboarding", "a1-2b", &"x".repeat(64)] {
            assert!(is_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "é"] {
            assert!(!is_name(bad), "{bad}");
        }
        for ok in ["a", "check_vendor", "a-1", &"x".repeat(64)] {
            assert!(is_step_id(ok), "{ok}");
        }
        for bad in ["", "1a", "_a", "A", "a.b", &"x".repeat(65)] {
            assert!(!is_step_id(bad), "{bad}");
        }
    }
}
