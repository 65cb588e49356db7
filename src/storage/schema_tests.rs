//! The declarations in this folder checked against the shipped migrations: every declared
//! column exists, every column is declared (or known to be written beside the record), and
//! each string enum spells exactly what the schema's CHECK allows.

use super::agents::AGENTS;
use super::api_keys::{ACCOUNTS, API_KEYS};
use super::chatbots::CHATBOTS;
use super::crawls::CRAWLS;
use super::data_sources::{CHUNKS, DATA_SOURCES, MAINTENANCE_POSITIONS};
use super::feedback::FEEDBACK;
use super::sessions::{MESSAGES, SESSIONS};
use super::source_tags::SOURCE_TAGS;
use super::table::{Role, Table};
use super::tool_functions::TOOL_FUNCTIONS;
use super::vectors::{VECTOR_INDEXES, VECTOR_OUTBOX};
use super::webhooks::{WEBHOOKS, WEBHOOK_DELIVERIES};
use edgechat_core::domain::agent::AgentType;
use edgechat_core::domain::chatbot::Visibility;
use edgechat_core::domain::data_source::{SourceType, Status};
use edgechat_core::domain::feedback::Rating;
use edgechat_core::domain::session::{FinishReason, MessageKind};
use edgechat_core::domain::tool_function::HttpMethod;
use edgechat_core::domain::webhook::DeliveryStatus;
use edgechat_core::knowledge::steps::Refresh;
use std::collections::BTreeMap;

const TABLES: &[&Table] = &[
    &ACCOUNTS,
    &API_KEYS,
    &CHATBOTS,
    &AGENTS,
    &DATA_SOURCES,
    &CHUNKS,
    &CRAWLS,
    &SOURCE_TAGS,
    &SESSIONS,
    &MESSAGES,
    &TOOL_FUNCTIONS,
    &VECTOR_OUTBOX,
    &VECTOR_INDEXES,
    &MAINTENANCE_POSITIONS,
    &FEEDBACK,
    &WEBHOOKS,
    &WEBHOOK_DELIVERIES,
];

/// Columns written beside a record rather than read into it, and generated ones.
const UNDECLARED: &[(&str, &str)] = &[
    ("api_keys", "key_hash"),
    ("data_sources", "content_hash"),
    ("data_sources", "crawl_uuid"),
    ("data_sources", "refresh"),
    ("data_sources", "next_check_at"),
    ("data_sources", "etag"),
    ("data_sources", "last_modified"),
    ("data_sources", "page_hash"),
    ("data_sources", "ingest_run"),
    ("data_sources", "step_failure"),
    ("data_sources", "checked_before"),
    ("crawls", "step_failure"),
    ("sessions", "visitor_id"),
    ("chunks", "id"),
];

/// Tables no record is read from: a link table, written and read by its own statements.
const UNDECLARED_TABLES: &[&str] = &["data_source_tags", "crawl_pages", "chunk_drafts"];

#[derive(Default)]
struct Schema {
    columns: BTreeMap<String, Vec<String>>,
    /// (table, column) → the values its CHECK (column IN (...)) allows.
    checks: BTreeMap<(String, String), Vec<String>>,
}

/// Every migration, in order, with comments removed.
fn migrations() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the migrations folder")
        .map(|e| e.expect("a migration").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .expect("a readable migration")
                .lines()
                .map(|l| l.split("--").next().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn word_after<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line.trim().strip_prefix(prefix)?;
    rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .filter(|w| !w.is_empty())
}

fn parse(sql: &str) -> Schema {
    let mut schema = Schema::default();
    let mut creating: Option<String> = None;
    let mut last_table = String::new();
    for line in sql.lines() {
        let trimmed = line.trim();
        if let Some(table) = word_after(trimmed, "CREATE TABLE ") {
            creating = Some(table.to_string());
            last_table = table.to_string();
            schema.columns.entry(table.to_string()).or_default();
        } else if let Some(table) = word_after(trimmed, "DROP TABLE ") {
            schema.columns.remove(table);
            schema.checks.retain(|(t, _), _| t != table);
        } else if let Some((from, to)) = trimmed
            .strip_prefix("ALTER TABLE ")
            .and_then(|rest| rest.trim_end_matches(';').split_once(" RENAME TO "))
        {
            let (from, to) = (from.trim().to_string(), to.trim().to_string());
            if let Some(columns) = schema.columns.remove(&from) {
                schema.columns.insert(to.clone(), columns);
            }
            let moved: Vec<_> = schema
                .checks
                .keys()
                .filter(|(t, _)| *t == from)
                .cloned()
                .collect();
            for key in moved {
                if let Some(values) = schema.checks.remove(&key) {
                    schema.checks.insert((to.clone(), key.1), values);
                }
            }
        } else if let Some(table) = word_after(trimmed, "ALTER TABLE ") {
            last_table = table.to_string();
            let column = trimmed
                .split_once(" ADD COLUMN ")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .expect("ALTER TABLE ... ADD COLUMN");
            schema
                .columns
                .entry(table.to_string())
                .or_default()
                .push(column.to_string());
        } else if trimmed.starts_with(')') {
            creating = None;
        } else if let Some(table) = &creating {
            let first = trimmed.split_whitespace().next().unwrap_or("");
            let is_constraint =
                ["PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"].contains(&first);
            if !first.is_empty() && !is_constraint {
                schema
                    .columns
                    .get_mut(table)
                    .expect("the table being created")
                    .push(first.to_string());
            }
        }
        if let Some((_, rest)) = trimmed.split_once("CHECK (") {
            if let Some((column, list)) = rest.split_once(" IN (") {
                let values = list
                    .split(')')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|v| v.trim().trim_matches('\'').to_string())
                    .collect();
                schema
                    .checks
                    .insert((last_table.clone(), column.trim().to_string()), values);
            }
        }
    }
    schema
}

#[test]
fn declared_tables_match_the_migrations() {
    let schema = parse(&migrations());
    for table in TABLES {
        let columns = schema
            .columns
            .get(table.name)
            .unwrap_or_else(|| panic!("no table {} in the migrations", table.name));
        for column in table.columns {
            if !matches!(column.role, Role::Computed(_)) {
                assert!(
                    columns.contains(&column.name.to_string()),
                    "{}.{} is declared but not in the migrations",
                    table.name,
                    column.name
                );
            }
        }
        for column in columns {
            assert!(
                table.has(column) || UNDECLARED.contains(&(table.name, column.as_str())),
                "{}.{column} is in the migrations but not declared in src/storage",
                table.name
            );
        }
    }
    for name in schema.columns.keys() {
        assert!(
            TABLES.iter().any(|t| t.name == name) || UNDECLARED_TABLES.contains(&name.as_str()),
            "the table {name} is not declared in src/storage"
        );
    }
}

#[test]
fn string_enums_spell_what_the_schema_allows() {
    let schema = parse(&migrations());
    let enums: &[(&str, &str, &[&str])] = &[
        ("chatbots", "visibility", Visibility::NAMES),
        ("agents", "type", AgentType::NAMES),
        ("data_sources", "type", SourceType::NAMES),
        ("data_sources", "status", Status::NAMES),
        ("data_sources", "refresh", Refresh::NAMES),
        ("crawls", "refresh", Refresh::NAMES),
        ("messages", "finish_reason", FinishReason::NAMES),
        ("messages", "kind", MessageKind::NAMES),
        ("tool_functions", "method", HttpMethod::NAMES),
        ("message_feedback", "rating", Rating::NAMES),
        ("webhook_deliveries", "status", DeliveryStatus::NAMES),
    ];
    for (table, column, names) in enums {
        let allowed = schema
            .checks
            .get(&(table.to_string(), column.to_string()))
            .unwrap_or_else(|| panic!("no CHECK on {table}.{column}"));
        assert_eq!(allowed, names, "{table}.{column}");
    }
}
