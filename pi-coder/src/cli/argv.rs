//! pi's command line before clap reads it: pi's two-letter short flags (`-nc`, `-nt`, `-nbt`,
//! `-ne`, `-ns`, `-np`) and `-v` become their long forms (clap's short flags are one letter),
//! and pi's package commands are recognized.

use std::ffi::OsString;

/// pi's short forms and what they stand for (`cli/args.ts`).
const SHORT_FORMS: [(&str, &str); 7] = [
    ("-nc", "--no-context-files"),
    ("-nt", "--no-tools"),
    ("-nbt", "--no-builtin-tools"),
    ("-ne", "--no-extensions"),
    ("-ns", "--no-skills"),
    ("-np", "--no-prompt-templates"),
    ("-v", "--version"),
];

/// pi's package commands (`package-manager-cli.ts`), which this pi does not have.
const PACKAGE_COMMANDS: [&str; 6] = ["install", "remove", "uninstall", "update", "list", "config"];

/// The arguments with pi's short forms spelled out (up to a `--`, after which everything is a
/// prompt).
pub(crate) fn normalize<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let mut out = Vec::new();
    let mut literal = false;
    for arg in args {
        let arg: OsString = arg.into();
        if literal {
            out.push(arg);
            continue;
        }
        if arg == "--" {
            literal = true;
            out.push(arg);
            continue;
        }
        let long = arg
            .to_str()
            .and_then(|text| SHORT_FORMS.iter().find(|(short, _)| *short == text))
            .map(|(_, long)| OsString::from(long));
        out.push(long.unwrap_or(arg));
    }
    out
}

/// The package command the arguments start with (`pi install npm:x`), if any.
pub(crate) fn package_command(args: &[OsString]) -> Option<&str> {
    let first = args.get(1)?.to_str()?;
    PACKAGE_COMMANDS.contains(&first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_become_long_ones_until_a_double_dash() {
        let args = normalize(["pi", "-nc", "-v", "-p", "--", "-nt"]);
        assert_eq!(
            args,
            ["pi", "--no-context-files", "--version", "-p", "--", "-nt"]
        );
        assert_eq!(
            package_command(&normalize(["pi", "install", "npm:x"])),
            Some("install")
        );
        assert_eq!(package_command(&normalize(["pi", "-p", "install"])), None);
    }
}
