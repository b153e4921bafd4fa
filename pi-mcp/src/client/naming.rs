//! MCP tool names to our tool names: MCP allows `.` and up to 128 characters, our models accept
//! `^[a-zA-Z0-9_-]{1,64}$`, and two servers may both have a `search`.

use std::collections::HashSet;

/// The longest name a model provider accepts.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// Between a server's prefix and its tool's name: `github__search`.
pub(crate) const PREFIX_SEPARATOR: &str = "__";

/// Gives each MCP tool of one server a distinct valid name, in the server's listing order.
///
/// The rule (also in the README): characters outside `[a-zA-Z0-9_-]` become `_`; the prefix, when
/// set, comes first with `__`; a name still longer than 64 characters, or one that a previous
/// tool already took, keeps its first 55 characters and ends with `_` plus 8 hex digits of a hash
/// of the full MCP name, so the same server always yields the same names.
#[derive(Debug)]
pub(crate) struct NameMapper {
    prefix: Option<String>,
    taken: HashSet<String>,
}

impl NameMapper {
    pub(crate) fn new(prefix: Option<&str>) -> Self {
        NameMapper {
            prefix: prefix.map(sanitize).filter(|prefix| !prefix.is_empty()),
            taken: HashSet::new(),
        }
    }

    /// The name the model will see for the MCP tool `mcp_name`.
    pub(crate) fn map(&mut self, mcp_name: &str) -> String {
        let mut name = match &self.prefix {
            Some(prefix) => format!("{prefix}{PREFIX_SEPARATOR}{}", sanitize(mcp_name)),
            None => sanitize(mcp_name),
        };
        if name.is_empty() {
            name.push_str("tool");
        }
        if name.len() > MAX_NAME_LEN || self.taken.contains(&name) {
            name = shortened(&name, mcp_name);
        }
        self.taken.insert(name.clone());
        name
    }
}

/// Replaces every character a model provider refuses with `_`.
pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The first 55 characters of `name`, `_`, and 8 hex digits of the hash of `mcp_name`.
fn shortened(name: &str, mcp_name: &str) -> String {
    // `name` is ASCII after `sanitize`, so byte slicing stays on character boundaries.
    let keep = name.len().min(MAX_NAME_LEN - 9);
    format!("{}_{:08x}", &name[..keep], fnv1a(mcp_name.as_bytes()))
}

/// FNV-1a, 32 bits: stable across runs and platforms (std's hasher is not).
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_NAME_LEN).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_stay_and_prefix_joins_with_two_underscores() {
        assert_eq!(NameMapper::new(None).map("get-sum"), "get-sum");
        assert_eq!(
            NameMapper::new(Some("everything")).map("echo"),
            "everything__echo"
        );
    }

    #[test]
    fn dots_and_other_characters_become_underscores() {
        assert_eq!(NameMapper::new(None).map("files.read"), "files_read");
        assert_eq!(
            NameMapper::new(Some("my server")).map("a/b"),
            "my_server__a_b"
        );
        assert_eq!(NameMapper::new(None).map("café"), "caf_");
        assert_eq!(NameMapper::new(None).map(""), "tool");
    }

    #[test]
    fn long_names_are_shortened_with_a_stable_hash() {
        let long = "x".repeat(128);
        let first = NameMapper::new(Some("srv")).map(&long);
        let again = NameMapper::new(Some("srv")).map(&long);
        assert_eq!(first, again);
        assert_eq!(first.len(), MAX_NAME_LEN);
        assert!(valid(&first), "{first}");
        let other = NameMapper::new(Some("srv")).map(&format!("{long}y"));
        assert_ne!(first, other);
    }

    #[test]
    fn names_that_collide_after_mapping_stay_distinct() {
        let mut mapper = NameMapper::new(None);
        let dotted = mapper.map("a.b");
        let underscored = mapper.map("a_b");
        assert_eq!(dotted, "a_b");
        assert_ne!(dotted, underscored);
        assert!(valid(&underscored), "{underscored}");
    }

    #[test]
    fn every_mapped_name_is_valid() {
        let mut mapper = NameMapper::new(Some(
            "a.very.long.server.name.that.goes.on.and.on.and.on.forever",
        ));
        for name in ["t", "t.t", "ünïcödé", &"z".repeat(200), "t"] {
            let mapped = mapper.map(name);
            assert!(valid(&mapped), "{mapped}");
        }
    }
}
