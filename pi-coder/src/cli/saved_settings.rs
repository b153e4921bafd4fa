//! Writes choices to the agent directory's `settings.json` as pi does (`SettingsManager`): the
//! model chosen (`defaultProvider`, `defaultModel`), the thinking level
//! (`defaultThinkingLevel`); the other keys are kept as they are, and the file is written as
//! pi writes it (two-space JSON). A file that is not valid JSON is left alone (an error says
//! so) rather than replaced.

use std::path::Path;

use serde_json::{Map, Value};

/// Sets `changes` in `<agent_dir>/settings.json` (created when missing).
pub(crate) fn save(agent_dir: &Path, changes: &[(&str, Value)]) -> Result<(), String> {
    let path = agent_dir.join("settings.json");
    let mut settings = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Map::new(),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(format!("{} is not a JSON object", path.display())),
            Err(err) => return Err(format!("{} is not valid JSON: {err}", path.display())),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(err) => return Err(format!("{}: {err}", path.display())),
    };
    for (key, value) in changes {
        settings.insert((*key).to_owned(), value.clone());
    }
    std::fs::create_dir_all(agent_dir).map_err(|err| format!("{}: {err}", agent_dir.display()))?;
    let text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|err| format!("settings: {err}"))?;
    // Written to a neighbour first, then renamed: a crash never leaves half a file.
    let temporary = agent_dir.join(format!(".settings.json.{}", std::process::id()));
    std::fs::write(&temporary, text).map_err(|err| format!("{}: {err}", temporary.display()))?;
    std::fs::rename(&temporary, &path).map_err(|err| format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_merged_into_the_file_and_bad_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        save(&agent, &[("defaultModel", "a".into())]).unwrap();
        std::fs::write(
            agent.join("settings.json"),
            r#"{"defaultModel": "a", "compaction": {"enabled": false}}"#,
        )
        .unwrap();
        save(
            &agent,
            &[
                ("defaultProvider", "mock".into()),
                ("defaultModel", "b".into()),
            ],
        )
        .unwrap();
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(agent.join("settings.json")).unwrap())
                .unwrap();
        assert_eq!(
            saved,
            serde_json::json!({"defaultModel": "b", "compaction": {"enabled": false}, "defaultProvider": "mock"})
        );
        std::fs::write(agent.join("settings.json"), "{ broken").unwrap();
        assert!(save(&agent, &[("defaultModel", "c".into())]).is_err());
        assert_eq!(
            std::fs::read_to_string(agent.join("settings.json")).unwrap(),
            "{ broken"
        );
    }
}
