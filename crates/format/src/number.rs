//! Numbers: the core schema's number forms, turned into JSON number text that hashes
//! without rounding.
//!
//! The content hash is RFC 8785, which writes every number as an IEEE 754 double. A
//! number that a double cannot hold exactly would be rounded by the hash, and the spec
//! says numbers are never rounded, so such a number is refused rather than rounded.

/// What a plain scalar is, read as a number.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Yaml {
    /// Not a number under the core schema: the scalar is a string.
    NotANumber,
    /// A number, as JSON number text.
    Number(String),
    /// A number form, but not one the frontmatter can hold.
    Refused(String),
}

/// Reads a plain scalar as a core-schema number.
pub(crate) fn from_yaml(text: &str) -> Yaml {
    let infinite = matches!(text.strip_prefix(['-', '+']).unwrap_or(text), ".inf" | ".Inf" | ".INF");
    if infinite || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Yaml::Refused(format!("{text} is not a finite number"));
    }
    let json = match (text.strip_prefix("0x"), text.strip_prefix("0o")) {
        (Some(digits), _) => radix(digits, 16),
        (_, Some(digits)) => radix(digits, 8),
        _ => decimal(text).map(Some),
    };
    match json {
        None => Yaml::NotANumber,
        Some(Some(json)) if exact_as_double(&json) => Yaml::Number(json),
        Some(_) => Yaml::Refused(format!(
            "{text} cannot be represented exactly as a JSON number (IEEE 754 double)"
        )),
    }
}

/// The core schema's integer forms: `[-+]?[0-9]+`, `0o[0-7]+`, `0x[0-9a-fA-F]+`.
pub(crate) fn is_int_form(text: &str) -> bool {
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    digits(text.strip_prefix(['-', '+']).unwrap_or(text), 10)
        || text.strip_prefix("0o").is_some_and(|s| digits(s, 8))
        || text.strip_prefix("0x").is_some_and(|s| digits(s, 16))
}

/// The core schema's float forms, which include plain decimal integers.
pub(crate) fn is_float_form(text: &str) -> bool {
    decimal(text).is_some()
}

/// The digits of `0x…` or `0o…` as decimal text: `None` when they are not of that
/// form, `Some(None)` when they are too large to convert.
fn radix(digits: &str, radix: u32) -> Option<Option<String>> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some(u128::from_str_radix(digits, radix).ok().map(|n| n.to_string()))
}

/// The core schema's decimal forms, `[-+]?[0-9]+` and
/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, as JSON number text.
fn decimal(text: &str) -> Option<String> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at..])),
        None => (unsigned, None),
    };
    let (integer, fraction) = match mantissa.find('.') {
        Some(at) => (&mantissa[..at], Some(&mantissa[at + 1..])),
        None => (mantissa, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(integer) || !fraction.is_none_or(all_digits) {
        return None;
    }
    if integer.is_empty() && fraction.is_none_or(str::is_empty) {
        return None;
    }
    if let Some(exponent) = exponent {
        let digits = exponent[1..].strip_prefix(['-', '+']).unwrap_or(&exponent[1..]);
        if digits.is_empty() || !all_digits(digits) {
            return None;
        }
    }
    let mut json = String::with_capacity(text.len() + 2);
    if negative {
        json.push('-');
    }
    let integer = integer.trim_start_matches('0');
    json.push_str(if integer.is_empty() { "0" } else { integer });
    if let Some(fraction) = fraction {
        json.push('.');
        json.push_str(if fraction.is_empty() { "0" } else { fraction });
    }
    if let Some(exponent) = exponent {
        json.push_str(exponent);
    }
    Some(json)
}

/// Whether the IEEE 754 double nearest to `json` has exactly its value.
pub(crate) fn exact_as_double(json: &str) -> bool {
    let Ok(double) = json.parse::<f64>() else {
        return false;
    };
    if !double.is_finite() {
        return false;
    }
    // `{:e}` writes the shortest digits that read back as the same double.
    match (normalize(json), normalize(&format!("{double:e}"))) {
        (Some(written), Some(held)) => written == held,
        _ => false,
    }
}

/// A decimal number as (negative, significant digits, power of ten), zero as no digits.
pub(crate) fn normalize(text: &str) -> Option<(bool, String, i64)> {
    let negative = text.starts_with('-');
    let unsigned = text.trim_start_matches(['-', '+']);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if integer.is_empty() && fraction.is_empty() || !format!("{integer}{fraction}").bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut digits: String = format!("{integer}{fraction}").trim_start_matches('0').to_owned();
    let mut power = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
    while digits.ends_with('0') {
        digits.pop();
        power = power.checked_add(1)?;
    }
    if digits.is_empty() {
        return Some((false, digits, 0));
    }
    Some((negative, digits, power))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactness() {
        for ok in [
            "0",
            "-0",
            "0.1",
            "1.50",
            "9007199254740993e-0",
            "1e21",
            "123456789012345680000",
            "5e-324",
        ] {
            let expected = ok != "9007199254740993e-0";
            assert_eq!(exact_as_double(ok), expected, "{ok}");
        }
        for bad in ["1e400", "12345678901234567890", "1e-400", "0.30000000000000001"] {
            assert!(!exact_as_double(bad), "{bad}");
        }
    }

    #[test]
    fn forms() {
        assert_eq!(from_yaml("1__0"), Yaml::NotANumber);
        assert_eq!(from_yaml("1e+-3"), Yaml::NotANumber);
        assert_eq!(from_yaml("."), Yaml::NotANumber);
        assert_eq!(from_yaml("-"), Yaml::NotANumber);
        assert_eq!(from_yaml("1e-3"), Yaml::Number("1e-3".into()));
        assert_eq!(from_yaml("inf"), Yaml::NotANumber);
        assert_eq!(from_yaml("x.inf"), Yaml::NotANumber);
        assert!(matches!(
            from_yaml("0x1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"),
            Yaml::Refused(_)
        ));
    }
}
