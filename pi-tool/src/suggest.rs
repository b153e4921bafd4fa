//! "Did you mean" suggestions for unknown tool and property names.

/// The candidate closest to `name`, if one is close enough to be a likely typo.
pub(crate) fn closest<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lowered = name.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let other = candidate.to_lowercase();
        let distance = strsim::damerau_levenshtein(&lowered, &other);
        let longest = lowered.chars().count().max(other.chars().count());
        let close = distance <= 1
            || distance * 3 <= longest
            || (lowered.len() >= 3
                && other.len() >= 3
                && (other.contains(&lowered) || lowered.contains(&other)));
        if close && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// ` (did you mean "x"?)` when a candidate is close, else an empty string.
pub(crate) fn did_you_mean<'a, I>(name: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    match closest(name, candidates) {
        Some(candidate) => format!(" (did you mean \"{candidate}\"?)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_typos_and_case_slips() {
        let names = ["get_weather", "read", "write"];
        assert_eq!(closest("get_wether", names), Some("get_weather"));
        assert_eq!(closest("Get_Weather", names), Some("get_weather"));
        assert_eq!(closest("weather", names), Some("get_weather"));
        assert_eq!(closest("wirte", names), Some("write"));
        assert_eq!(closest("bash", names), None);
        assert_eq!(closest("extra", ["extras"]), Some("extras"));
    }
}
