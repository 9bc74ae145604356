//! "Did you mean …?": the known name closest to a misspelt one.

/// The candidate closest to `word` when it is close enough to be a likely slip: at most
/// one edit for short words, about one in three for longer ones (a swap of two
/// neighbouring letters counts as one). Of equally close ones, the first in
/// alphabetical order, so that the answer does not depend on the candidates' order.
pub(crate) fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let allowed = (word.chars().count() / 3).max(1);
    let lowered = word.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == word {
            continue;
        }
        let distance = edits(&lowered, &candidate.to_lowercase());
        let better = |(found, chosen): (usize, &str)| distance < found || (distance == found && candidate < chosen);
        if distance <= allowed && best.is_none_or(better) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// `" (did you mean \"x\"?)"` for the closest candidate, or nothing.
pub(crate) fn hint<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    closest(word, candidates)
        .map(|found| format!(" (did you mean {found:?}?)"))
        .unwrap_or_default()
}

/// Edits (insertions, deletions, substitutions, swaps of neighbours) from `a` to `b`.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the optimal string alignment table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            current[j] = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = current[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slip_finds_its_word_and_a_stranger_finds_none() {
        let steps = ["collect_details", "check_vendor", "approve", "archive"];
        assert_eq!(closest("chek_vendor", steps), Some("check_vendor"));
        assert_eq!(closest("collect_detials", steps), Some("collect_details"));
        assert_eq!(closest("aprove", steps), Some("approve"));
        assert_eq!(closest("ship", steps), None);
        assert_eq!(closest("approve", steps), None);
        assert_eq!(closest("descripton", ["description", "inputs"]), Some("description"));
        assert_eq!(closest("Name", ["name", "steps"]), Some("name"));
        assert_eq!(hint("nxt", ["next", "id"]), " (did you mean \"next\"?)");
        assert_eq!(hint("colour", ["next", "id"]), "");
    }

    #[test]
    fn edits_count_a_swap_as_one() {
        assert_eq!(edits("ab", "ba"), 1);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("abc", ""), 3);
    }
}
