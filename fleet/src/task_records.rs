//! Task records in etcd (`/quiver/tasks/<id>`): what lets a task of the MCP
//! tasks extension outlive the edge that made it. The edge that holds a task
//! writes its record when the task is made and when it ends; an executor
//! that runs the task's script or call past its edge (the edge handed it a
//! [`TaskTicket`]) names itself in the record, and writes how the work ended.
//! Any edge reads a record it does not hold. Each record lives under an etcd
//! lease of the task's time to live plus the time an ended task stays
//! readable, so etcd forgets it by itself.

use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use rmcp::model::{DetailedTask, Task};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use quiver_contract::ScriptOutcome;

use crate::membership;

/// The prefix of every task record.
pub const PREFIX: &str = "/quiver/tasks/";

/// The largest end a record keeps, in bytes of JSON: well under etcd's
/// default limit of 1.5 MiB per request. A larger end is recorded as a
/// failure that says so (the edge holding the task still has it whole).
pub const MAX_RECORDED_END: usize = 1024 * 1024;

/// Tries of a change that lost a race with another writer.
const UPDATE_TRIES: usize = 8;

pub use quiver_upstream::TaskTicket;

/// How the work of a task ended, as whoever saw it end wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "as", rename_all = "snake_case")]
pub enum TaskEnd {
    /// The holding edge's own view of the ended task.
    Detailed {
        /// The task, as `tasks/get` answers it.
        task: DetailedTask,
    },
    /// A script's outcome, from the executor that ran it.
    Script {
        /// What the script returned or how it failed.
        outcome: Box<ScriptOutcome>,
    },
    /// A script that could not run, from the executor.
    ScriptFailed {
        /// Why.
        reason: String,
    },
    /// A tool call's result (JSON of `CallToolResult`), from the executor.
    Tool {
        /// The result.
        result: Value,
    },
    /// A tool call that failed (code and message of its error), from the executor.
    ToolFailed {
        /// The JSON-RPC code.
        code: i32,
        /// The message.
        message: String,
    },
}

/// One task's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The tenant it belongs to.
    pub tenant: String,
    /// The tool it calls.
    pub tool: String,
    /// The task as it was made (id, times, TTL, polling interval).
    pub task: Task,
    /// The edge that holds it.
    pub holder: String,
    /// The executor that runs its work past the holder, once it said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
    /// How it ended, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<TaskEnd>,
}

/// Why a task record could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskRecordError {
    /// etcd could not be reached.
    #[error("etcd is unreachable: {0}")]
    Unreachable(#[from] membership::MembershipError),
    /// etcd refused the request.
    #[error("etcd refused the request: {0}")]
    Etcd(#[from] etcd_client::Error),
    /// The stored record does not parse.
    #[error("the task record does not parse: {0}")]
    Unreadable(#[from] serde_json::Error),
}

/// Task records in the etcd at some endpoints.
pub struct TaskRecords {
    client: membership::LazyClient,
    /// How long a record outlives its task's TTL.
    kept_after: Duration,
}

impl TaskRecords {
    /// Records in the etcd at `endpoints`, each kept `kept_after` past its
    /// task's TTL.
    pub fn new(endpoints: Vec<String>, kept_after: Duration) -> TaskRecords {
        TaskRecords {
            client: membership::LazyClient::new(endpoints),
            kept_after,
        }
    }

    async fn client(&self) -> Result<Client, TaskRecordError> {
        Ok(self.client.get().await?)
    }

    /// Writes `record` under its task's id, for the task's TTL and then some.
    pub async fn put(&self, record: &TaskRecord) -> Result<(), TaskRecordError> {
        self.put_if(record, None).await.map(|_| ())
    }

    /// Writes `record` (its end cut to a failure past [`MAX_RECORDED_END`]),
    /// only if the stored record is still at `revision` when one is given;
    /// whether it was written.
    async fn put_if(
        &self,
        record: &TaskRecord,
        revision: Option<i64>,
    ) -> Result<bool, TaskRecordError> {
        let mut client = self.client().await?;
        let ttl = Duration::from_millis(record.task.ttl_ms.unwrap_or(0)) + self.kept_after;
        let lease = client
            .lease_grant(
                i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX),
                None,
            )
            .await?
            .id();
        let value = serde_json::to_vec(&kept(record)?)?;
        let key = format!("{PREFIX}{}", record.task.task_id);
        let put = Some(PutOptions::new().with_lease(lease));
        let Some(revision) = revision else {
            client.put(key, value, put).await?;
            return Ok(true);
        };
        let unchanged = Compare::mod_revision(key.as_str(), CompareOp::Equal, revision);
        let txn = Txn::new()
            .when([unchanged])
            .and_then([TxnOp::put(key.as_str(), value, put)]);
        Ok(client.txn(txn).await?.succeeded())
    }

    /// The record of task `id`, if etcd holds one.
    pub async fn get(&self, id: &str) -> Result<Option<TaskRecord>, TaskRecordError> {
        Ok(self.get_at(id).await?.map(|(record, _)| record))
    }

    /// The record of task `id` and the revision it was last written at.
    async fn get_at(&self, id: &str) -> Result<Option<(TaskRecord, i64)>, TaskRecordError> {
        let mut client = self.client().await?;
        let found = client.get(format!("{PREFIX}{id}"), None).await?;
        match found.kvs().first() {
            Some(kv) => Ok(Some((
                serde_json::from_slice(kv.value())?,
                kv.mod_revision(),
            ))),
            None => Ok(None),
        }
    }

    /// Changes task `id`'s record with `change`, if there is one (the
    /// executor's side: its name, then the end of the work), as one step: a
    /// change that raced another writer is made again on what it wrote. An
    /// end once recorded is never taken back.
    pub async fn update(
        &self,
        id: &str,
        change: impl Fn(&mut TaskRecord),
    ) -> Result<bool, TaskRecordError> {
        for _ in 0..UPDATE_TRIES {
            let Some((mut record, revision)) = self.get_at(id).await? else {
                return Ok(false);
            };
            let ended = record.end.clone();
            change(&mut record);
            if record.end.is_none() {
                record.end = ended;
            }
            if self.put_if(&record, Some(revision)).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// `record` as it is stored: an end past [`MAX_RECORDED_END`] becomes a
/// failure that says so.
fn kept(record: &TaskRecord) -> Result<std::borrow::Cow<'_, TaskRecord>, serde_json::Error> {
    let Some(end) = &record.end else {
        return Ok(std::borrow::Cow::Borrowed(record));
    };
    let size = serde_json::to_vec(end)?.len();
    if size <= MAX_RECORDED_END {
        return Ok(std::borrow::Cow::Borrowed(record));
    }
    let mut cut = record.clone();
    cut.end = Some(TaskEnd::ToolFailed {
        code: -32603,
        message: format!(
            "the task's result is {size} bytes, more than the {MAX_RECORDED_END} a task record keeps; \
             only the edge that held the task had it"
        ),
    });
    Ok(std::borrow::Cow::Owned(cut))
}
