//! [`SqliteRunStore`]: every run in one SQLite database file (rusqlite, with SQLite built in).
//! A run is a row of `runs` (its header) and rows of `messages` (one per message, appended);
//! each write is one transaction. Claims lock a file per run beside the database.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, params};

use super::journal::{self, Backend};
use super::lock::RunLock;
use super::{RunClaim, RunStore, StoreError};
use crate::run_state::RunState;

/// A [`RunStore`] in a SQLite database file (feature `sqlite`).
///
/// ```
/// use pi_runtime::{RunStore, SqliteRunStore};
///
/// let path = std::env::temp_dir().join(format!("pi-runs-doc-{}.sqlite", std::process::id()));
/// let store = SqliteRunStore::open(&path)?;
/// assert!(store.load("no-such-run").is_err());
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), pi_runtime::StoreError>(())
/// ```
#[derive(Clone, Debug)]
pub struct SqliteRunStore {
    database: Arc<Database>,
}

#[derive(Debug)]
struct Database {
    connection: Mutex<Session>,
    /// Where the claims' lock files go: `<database>.locks/`.
    locks: PathBuf,
}

/// The connection, and how its commits are synced.
#[derive(Debug)]
struct Session {
    connection: Connection,
    /// Durable records are synced to disk (the default; [`SqliteRunStore::without_sync`]
    /// turns it off).
    synced: bool,
    /// Whether the connection syncs its commits now (`synchronous = FULL`).
    syncing: bool,
}

impl Session {
    /// Syncs the next commit or not. In WAL mode a synced commit syncs the log up to it, so
    /// the unsynced records before it are made durable with it, in order.
    fn sync_next_commit(&mut self, sync: bool) -> Result<(), StoreError> {
        if self.syncing != sync {
            let pragma = if sync {
                "PRAGMA synchronous = FULL;"
            } else {
                "PRAGMA synchronous = NORMAL;"
            };
            self.connection.execute_batch(pragma).map_err(failed)?;
            self.syncing = sync;
        }
        Ok(())
    }
}

fn failed(err: rusqlite::Error) -> StoreError {
    StoreError::Io(format!("SQLite: {err}"))
}

impl SqliteRunStore {
    /// Opens (or creates) the database at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be opened as a SQLite database.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteRunStore, StoreError> {
        let path = path.as_ref();
        let connection = Connection::open(path).map_err(failed)?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 CREATE TABLE IF NOT EXISTS runs (
                     id TEXT PRIMARY KEY,
                     header TEXT NOT NULL
                 );
                 CREATE TABLE IF NOT EXISTS messages (
                     run TEXT NOT NULL,
                     offset INTEGER NOT NULL,
                     line TEXT NOT NULL,
                     PRIMARY KEY (run, offset)
                 );",
            )
            .map_err(failed)?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(failed)?;
        let mut locks = path.as_os_str().to_owned();
        locks.push(".locks");
        let locks = PathBuf::from(locks);
        std::fs::create_dir_all(&locks)?;
        Ok(SqliteRunStore {
            database: Arc::new(Database {
                connection: Mutex::new(Session {
                    connection,
                    synced: true,
                    syncing: true,
                }),
                locks,
            }),
        })
    }
}

impl SqliteRunStore {
    /// Commits without waiting for the disk (SQLite's `synchronous = NORMAL` in WAL mode): a
    /// killed process loses nothing (what it wrote is with the system), so exactly once holds
    /// across a kill -9; a power cut or a system crash may lose the last records, and then a
    /// call recorded as started may not be known as such. By default the records exactly once
    /// depends on (a call's start, a pause, an end) are synced (`synchronous = FULL`), and
    /// the others with them (see the crate README, "What is durable when").
    ///
    /// # Errors
    ///
    /// The database refused the setting.
    pub fn without_sync(self) -> Result<SqliteRunStore, StoreError> {
        let mut session = self.database.connection();
        session.synced = false;
        session.sync_next_commit(false)?;
        drop(session);
        Ok(self)
    }
}

impl RunStore for SqliteRunStore {
    fn create(&self, state: &RunState) -> Result<String, StoreError> {
        journal::create(self.database.as_ref(), state)
    }

    fn load(&self, run: &str) -> Result<RunState, StoreError> {
        journal::load(self.database.as_ref(), run).map(|(_, state)| state)
    }

    fn claim(&self, run: &str, state: &RunState) -> Result<Box<dyn RunClaim>, StoreError> {
        journal::claim(Arc::clone(&self.database), run, state)
    }
}

impl Database {
    fn connection(&self) -> MutexGuard<'_, Session> {
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The stored header of `run`.
fn read_header(connection: &Connection, run: &str) -> Result<String, StoreError> {
    let header: Option<String> = connection
        .prepare_cached("SELECT header FROM runs WHERE id = ?1")
        .and_then(|mut select| select.query_row([run], |row| row.get(0)).optional())
        .map_err(failed)?;
    header.ok_or_else(|| StoreError::NotFound(run.to_owned()))
}

/// Inserts `lines` as the messages of `run` starting at byte `offset`.
fn insert_lines(
    transaction: &rusqlite::Transaction<'_>,
    run: &str,
    mut offset: u64,
    lines: &[String],
) -> Result<(), StoreError> {
    let mut insert = transaction
        .prepare_cached("INSERT INTO messages (run, offset, line) VALUES (?1, ?2, ?3)")
        .map_err(failed)?;
    for line in lines {
        insert
            .execute(params![run, offset as i64, line])
            .map_err(failed)?;
        offset += line.len() as u64;
    }
    Ok(())
}

impl Backend for Database {
    fn create(&self, run: &str, header: &str, lines: &[String]) -> Result<(), StoreError> {
        let mut session = self.connection();
        let synced = session.synced;
        session.sync_next_commit(synced)?;
        let transaction = session.connection.transaction().map_err(failed)?;
        transaction
            .execute(
                "INSERT INTO runs (id, header) VALUES (?1, ?2)",
                params![run, header],
            )
            .map_err(failed)?;
        insert_lines(&transaction, run, 0, lines)?;
        transaction.commit().map_err(failed)
    }

    fn read_header(&self, run: &str) -> Result<String, StoreError> {
        read_header(&self.connection().connection, run)
    }

    fn read(&self, run: &str) -> Result<(String, String), StoreError> {
        let session = self.connection();
        let connection = &session.connection;
        let header = read_header(connection, run)?;
        let mut select = connection
            .prepare_cached("SELECT offset, line FROM messages WHERE run = ?1 ORDER BY offset")
            .map_err(failed)?;
        let mut rows = select.query([run]).map_err(failed)?;
        let mut text = String::new();
        while let Some(row) = rows.next().map_err(failed)? {
            let offset: i64 = row.get(0).map_err(failed)?;
            if offset as u64 != text.len() as u64 {
                return Err(StoreError::Damaged {
                    run: run.to_owned(),
                    what: format!("a message is missing before byte {offset}"),
                });
            }
            let line: String = row.get(1).map_err(failed)?;
            text.push_str(&line);
        }
        Ok((header, text))
    }

    fn append(
        &self,
        run: &str,
        bytes_before: u64,
        lines: &[String],
        header: &str,
        durable: bool,
    ) -> Result<(), StoreError> {
        let mut session = self.connection();
        let sync = session.synced && durable;
        session.sync_next_commit(sync)?;
        let transaction = session.connection.transaction().map_err(failed)?;
        if !lines.is_empty() {
            transaction
                .prepare_cached("DELETE FROM messages WHERE run = ?1 AND offset >= ?2")
                .and_then(|mut delete| delete.execute(params![run, bytes_before as i64]))
                .map_err(failed)?;
            insert_lines(&transaction, run, bytes_before, lines)?;
        }
        let changed = transaction
            .prepare_cached("UPDATE runs SET header = ?2 WHERE id = ?1")
            .and_then(|mut update| update.execute(params![run, header]))
            .map_err(failed)?;
        if changed == 0 {
            return Err(StoreError::NotFound(run.to_owned()));
        }
        transaction.commit().map_err(failed)
    }

    fn lock(&self, run: &str) -> Result<RunLock, StoreError> {
        RunLock::take(&self.locks.join(format!("{run}.lock")), run)
    }
}
