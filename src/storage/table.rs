//! Each table's columns, declared once with `table!`, and the statements built from them.
//!
//! A declaration names the row struct reads deserialize into, the table, and each column with
//! its role:
//!
//! ```ignore
//! table! {
//!     pub(super) struct ToolRow in TOOL_FUNCTIONS = "tool_functions" {
//!         key uuid: String,           // names the row: the WHERE of an update
//!         fixed agent_uuid: String,   // written once, by the insert
//!         set name: String,           // written by the insert and by every update
//!         fixed created_at: String,
//!         set modified_at: String,
//!     }
//! }
//! ```
//!
//! A field whose column is spelled otherwise says so (`fixed agent_type as "type": AgentType`);
//! a read-only value computed in SQL gives its expression (`computed n: String = "(...)"`, with
//! `{t}` standing for the table or its alias). From that one list come the SELECT list
//! (`Table::select`), the INSERT column list and its placeholders (`Sql::insert`,
//! `Sql::insert_select`), the UPDATE SET list (`Sql::update`, `Sql::upsert`) and the bind
//! order (`Row::values`). A placeholder is only ever written by the builder as it pushes its
//! argument, so the two cannot drift apart, and a statement binds exactly the values its
//! placeholders name (D1 refuses any other count).

use super::Arg;
use edgechat_core::merge_patch;

/// What a statement may do with a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Names the row: written by the insert, the `WHERE` of an update, never changed.
    Key,
    /// Written by the insert and never changed after (the owner, the type, `created_at`).
    Fixed,
    /// Written by the insert and by every update.
    Set,
    /// Only read: an SQL expression, `{t}` standing for the table (or its alias).
    Computed(&'static str),
}

#[derive(Debug)]
pub struct Column {
    pub name: &'static str,
    pub role: Role,
}

/// A table and its columns, in declaration order.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
}

/// A row struct declared with `table!`.
pub trait Row {
    const TABLE: &'static Table;

    /// One value per column of `TABLE`, in its order.
    fn values(&self) -> Vec<Arg<'_>>;
}

impl Table {
    /// The columns a read takes, each as `alias.column` (`alias` may be empty), computed ones
    /// as `expression AS name`.
    pub fn select(&self, alias: &str) -> String {
        let prefix = if alias.is_empty() {
            String::new()
        } else {
            format!("{alias}.")
        };
        let table = if alias.is_empty() { self.name } else { alias };
        self.columns
            .iter()
            .map(|c| match c.role {
                Role::Computed(expression) => {
                    format!("{} AS {}", expression.replace("{t}", table), c.name)
                }
                _ => format!("{prefix}{}", c.name),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn has(&self, column: &str) -> bool {
        self.columns.iter().any(|c| c.name == column)
    }

    /// The columns an insert writes, with their place in `Row::values`.
    fn written(&self) -> impl Iterator<Item = (usize, &'static Column)> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !matches!(c.role, Role::Computed(_)))
    }

    fn with_role(&self, role: Role) -> impl Iterator<Item = (usize, &'static Column)> {
        self.columns
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.role == role)
    }
}

/// One statement and the arguments its placeholders name, in placeholder order.
pub struct Sql<'a> {
    text: String,
    args: Vec<Arg<'a>>,
    /// For an insert: each written column and the placeholder of its value.
    columns: Vec<(&'static str, String)>,
}

impl<'a> Sql<'a> {
    /// A statement starting with `text`, which must not hold placeholders of its own.
    pub fn new(text: &str) -> Self {
        Sql {
            text: text.to_string(),
            args: Vec::new(),
            columns: Vec::new(),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn args(&self) -> &[Arg<'a>] {
        &self.args
    }

    /// Adds an argument; its placeholder, to write into the text.
    pub fn bind(&mut self, arg: Arg<'a>) -> String {
        self.args.push(arg);
        format!("?{}", self.args.len())
    }

    /// Appends SQL, which may name placeholders returned by `bind` or `param`.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// The placeholder holding `column`'s value in an insert built here.
    pub fn param(&self, column: &str) -> String {
        self.columns
            .iter()
            .find(|(name, _)| *name == column)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("the statement writes no column {column}"))
    }

    /// Binds the row's written columns, then `extra` (columns the record does not carry, such
    /// as a key's hash); the column list and each value's placeholder.
    fn bind_row<R: Row>(
        row: &'a R,
        extra: Vec<(&'static str, Arg<'a>)>,
    ) -> (Self, Vec<&'static str>, Vec<String>) {
        let mut sql = Sql::new("");
        let values = row.values();
        let mut names = Vec::new();
        let mut params = Vec::new();
        let written = R::TABLE.written().map(|(i, c)| (c.name, values[i]));
        for (name, value) in written.chain(extra) {
            let p = sql.bind(value);
            sql.columns.push((name, p.clone()));
            names.push(name);
            params.push(p);
        }
        (sql, names, params)
    }

    /// `INSERT INTO t (every written column, then extra's) VALUES (?1, ...)`.
    pub fn insert<R: Row>(row: &'a R, extra: Vec<(&'static str, Arg<'a>)>) -> Self {
        let (mut sql, names, params) = Self::bind_row(row, extra);
        sql.text = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            R::TABLE.name,
            names.join(", "),
            params.join(", ")
        );
        sql
    }

    /// `insert`, or, when a row with the same key exists, every written column of that row
    /// overwritten. Unlike `INSERT OR REPLACE`, which deletes the old row first, rows referring
    /// to it (`ON DELETE CASCADE`: a message's rating) stay.
    pub fn overwrite<R: Row>(row: &'a R) -> Self {
        let columns = R::TABLE.written().filter(|(_, c)| c.role != Role::Key);
        Self::insert_or_update(row, columns, &[])
    }

    /// `INSERT INTO t (every written column) SELECT ?1, ...`, for an insert that a condition
    /// may turn into nothing; the caller appends its `FROM` or `WHERE`. `replaced` gives
    /// another expression for some columns' values (their arguments stay bound, for the
    /// appended text to name through `param`).
    pub fn insert_select<R: Row>(row: &'a R, replaced: &[(&str, &str)]) -> Self {
        let (mut sql, names, params) = Self::bind_row(row, Vec::new());
        let values: Vec<&str> = names
            .iter()
            .zip(&params)
            .map(|(name, p)| {
                replaced
                    .iter()
                    .find(|(column, _)| column == name)
                    .map_or(p.as_str(), |(_, expression)| expression)
            })
            .collect();
        sql.text = format!(
            "INSERT INTO {} ({}) SELECT {}",
            R::TABLE.name,
            names.join(", "),
            values.join(", ")
        );
        sql
    }

    /// An insert that, for a row whose key exists already, updates that row's `set` columns
    /// instead.
    pub fn upsert<R: Row>(row: &'a R) -> Self {
        Self::upsert_keeping(row, &[])
    }

    /// `upsert`, but the `kept` columns keep their stored value where `row` has none (NULL).
    pub fn upsert_keeping<R: Row>(row: &'a R, kept: &[&str]) -> Self {
        Self::insert_or_update(row, R::TABLE.with_role(Role::Set), kept)
    }

    /// `insert`, updating `columns` of the row whose key exists already (the `kept` ones only
    /// with a value).
    fn insert_or_update<R: Row>(
        row: &'a R,
        columns: impl Iterator<Item = (usize, &'static Column)>,
        kept: &[&str],
    ) -> Self {
        let mut sql = Self::insert(row, Vec::new());
        let keys: Vec<&str> = R::TABLE.with_role(Role::Key).map(|(_, c)| c.name).collect();
        let sets: Vec<String> = columns
            .map(|(_, c)| {
                if kept.contains(&c.name) {
                    format!("{0} = COALESCE(excluded.{0}, {0})", c.name)
                } else {
                    format!("{0} = excluded.{0}", c.name)
                }
            })
            .collect();
        sql.push(&format!(
            " ON CONFLICT ({}) DO UPDATE SET {}",
            keys.join(", "),
            sets.join(", ")
        ));
        sql
    }

    /// `UPDATE t SET (every set column) WHERE (every key column)`; the caller may append
    /// further conditions (`AND ...`).
    pub fn update<R: Row>(row: &'a R) -> Self {
        Self::update_where(row, |_, _| true, &[])
    }

    /// `UPDATE t SET (the set columns `after` holds otherwise than `before`) WHERE (every key
    /// column)`: a partial update writes what it changed and nothing else, so two updates of
    /// different fields at the same moment both stand, rather than the later one writing the
    /// earlier one's fields back as it read them.
    /// A JSON object column (named `..._json`) is written as the merge patch `patches` holds
    /// for it (`json_patches`), so that two updates of different keys of one object also both
    /// stand.
    pub fn update_changed<R: Row>(before: &R, after: &'a R, patches: &'a [Option<String>]) -> Self {
        let was = before.values();
        Self::update_where(after, |i, now| was[i] != *now, patches)
    }

    /// For each column of `after`, the merge patch from `before`'s value when both are JSON
    /// objects in a `..._json` column and differ (`merge_patch::between`).
    pub fn json_patches<R: Row>(before: &R, after: &R) -> Vec<Option<String>> {
        let was = before.values();
        R::TABLE
            .columns
            .iter()
            .zip(was.iter().zip(after.values()))
            .map(|(column, pair)| match pair {
                (Arg::Text(was), Arg::Text(now))
                    if column.name.ends_with("_json") && *was != now =>
                {
                    merge_patch::between(was, now)
                }
                _ => None,
            })
            .collect()
    }

    /// `update` of the set columns `write` picks (by index and value). A column with a patch
    /// in `patches` (by index) is patched rather than overwritten. When it picks none, the
    /// statement sets the key to itself: it still finds the row (its change count says the
    /// row exists) and writes nothing that an update at the same moment could lose.
    fn update_where<R: Row>(
        row: &'a R,
        write: impl Fn(usize, &Arg<'a>) -> bool,
        patches: &'a [Option<String>],
    ) -> Self {
        let values = row.values();
        let picked: Vec<_> = R::TABLE
            .with_role(Role::Set)
            .filter(|(i, _)| write(*i, &values[*i]))
            .collect();
        let mut sql = Sql::new("");
        let mut assignments: Vec<String> = picked
            .into_iter()
            .map(|(i, c)| match patches.get(i) {
                Some(Some(patch)) => format!(
                    "{0} = json_patch(COALESCE({0}, '{{}}'), {1})",
                    c.name,
                    sql.bind(Arg::Text(patch))
                ),
                _ => format!("{} = {}", c.name, sql.bind(values[i])),
            })
            .collect();
        if assignments.is_empty() {
            assignments.extend(
                R::TABLE
                    .with_role(Role::Key)
                    .map(|(_, c)| format!("{0} = {0}", c.name)),
            );
        }
        sql.text = format!("UPDATE {} SET {}", R::TABLE.name, assignments.join(", "));
        let keys: Vec<String> = R::TABLE
            .with_role(Role::Key)
            .map(|(i, c)| format!("{} = {}", c.name, sql.bind(values[i])))
            .collect();
        sql.push(&format!(" WHERE {}", keys.join(" AND ")));
        sql
    }

    /// `UPDATE t SET a = ?1, b = ?2, ...` for the columns given, each next to its value; the
    /// caller appends the `WHERE`.
    pub fn update_columns(table: &Table, set: Vec<(&'static str, Arg<'a>)>) -> Self {
        let mut sql = Sql::new("");
        let assignments: Vec<String> = set
            .into_iter()
            .map(|(name, value)| {
                debug_assert!(table.has(name), "{} has no column {name}", table.name);
                format!("{name} = {}", sql.bind(value))
            })
            .collect();
        sql.text = format!("UPDATE {} SET {}", table.name, assignments.join(", "));
        sql
    }

    /// How many rows one `insert_rows` may hold: D1 binds at most 100 parameters a statement.
    pub fn rows_per_insert<R: Row>() -> usize {
        (100 / R::TABLE.written().count().max(1)).max(1)
    }

    /// One `INSERT` of several rows: `VALUES (?1, ...), (?n+1, ...)`; at most
    /// `rows_per_insert` of them.
    pub fn insert_rows<R: Row>(rows: &'a [R]) -> Self {
        let (mut sql, values) = Self::bound_tuples(rows);
        sql.text = format!(
            "INSERT INTO {} ({}) VALUES {values}",
            R::TABLE.name,
            written_names::<R>().join(", ")
        );
        sql
    }

    /// As `insert_rows`, but rows whose `column` names no row of `parent` (by `uuid`) are
    /// left out rather than failing the statement: the parent may have been deleted since the
    /// rows were made, and its children would be deleted with it anyway.
    pub fn insert_rows_with_parent<R: Row>(rows: &'a [R], column: &str, parent: &str) -> Self {
        let names = written_names::<R>();
        let Some(at) = names.iter().position(|n| *n == column) else {
            debug_assert!(false, "{} writes no column {column}", R::TABLE.name);
            return Self::insert_rows(rows);
        };
        let (mut sql, values) = Self::bound_tuples(rows);
        // SQLite names a VALUES list's columns column1, column2, ...
        let picked: Vec<String> = (1..=names.len()).map(|i| format!("v.column{i}")).collect();
        sql.text = format!(
            "INSERT INTO {} ({}) SELECT {} FROM (VALUES {values}) AS v \
             WHERE EXISTS (SELECT 1 FROM {parent} p WHERE p.uuid = v.column{})",
            R::TABLE.name,
            names.join(", "),
            picked.join(", "),
            at + 1
        );
        sql
    }

    /// One `INSERT` of every row of the JSON array `rows` (objects keyed by column name),
    /// with each of `shared`'s columns bound once for all of them: a few arguments however
    /// many rows, where `insert_rows` binds every value on its own.
    pub fn insert_json_rows<R: Row>(
        mut shared: Vec<(&'static str, Arg<'a>)>,
        rows: &'a str,
    ) -> Self {
        let mut sql = Sql::new("");
        let names = written_names::<R>();
        let values: Vec<String> = names
            .iter()
            .map(|name| match shared.iter().position(|(n, _)| n == name) {
                Some(at) => sql.bind(shared.swap_remove(at).1),
                None => format!("json_extract(j.value, '$.{name}')"),
            })
            .collect();
        debug_assert!(shared.is_empty(), "{} has no such column", R::TABLE.name);
        let array = sql.bind(Arg::Text(rows));
        sql.text = format!(
            "INSERT INTO {} ({}) SELECT {} FROM json_each({array}) j",
            R::TABLE.name,
            names.join(", "),
            values.join(", ")
        );
        sql
    }

    /// The rows' written columns bound in order, as `(?1, ...), (?n+1, ...)`, with the `Sql`
    /// holding their values.
    fn bound_tuples<R: Row>(rows: &'a [R]) -> (Self, String) {
        let mut sql = Sql::new("");
        let tuples: Vec<String> = rows
            .iter()
            .map(|row| {
                let values = row.values();
                let params: Vec<String> = R::TABLE
                    .written()
                    .map(|(i, _)| sql.bind(values[i]))
                    .collect();
                format!("({})", params.join(", "))
            })
            .collect();
        (sql, tuples.join(", "))
    }
}

fn written_names<R: Row>() -> Vec<&'static str> {
    R::TABLE.written().map(|(_, c)| c.name).collect()
}

/// How a row field is bound.
pub trait ToArg {
    fn to_arg(&self) -> Arg<'_>;
}

impl ToArg for String {
    fn to_arg(&self) -> Arg<'_> {
        Arg::Text(self)
    }
}

impl ToArg for i64 {
    fn to_arg(&self) -> Arg<'_> {
        Arg::Int(*self)
    }
}

impl ToArg for f64 {
    fn to_arg(&self) -> Arg<'_> {
        Arg::Real(*self)
    }
}

impl<T: ToArg> ToArg for Option<T> {
    fn to_arg(&self) -> Arg<'_> {
        self.as_ref().map_or(Arg::Null, ToArg::to_arg)
    }
}

/// String enums are stored as their spelling.
macro_rules! enums_as_text {
    ($($name:ty),+ $(,)?) => {
        $(
            impl ToArg for $name {
                fn to_arg(&self) -> Arg<'_> {
                    Arg::Text(self.as_str())
                }
            }
        )+
    };
}

enums_as_text!(
    edgechat_core::domain::agent::AgentType,
    edgechat_core::domain::chatbot::Visibility,
    edgechat_core::domain::data_source::SourceType,
    edgechat_core::domain::data_source::Status,
    edgechat_core::domain::session::FinishReason,
    edgechat_core::domain::session::MessageKind,
    edgechat_core::domain::tool_function::HttpMethod,
    edgechat_core::domain::feedback::Rating,
    edgechat_core::domain::webhook::Event,
    edgechat_core::domain::webhook::DeliveryStatus,
    edgechat_core::knowledge::steps::Refresh,
);

/// A column's name: the field's, unless the declaration spells it otherwise.
macro_rules! column_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident, $column:literal) => {
        $column
    };
}

macro_rules! role {
    (key) => {
        $crate::storage::table::Role::Key
    };
    (fixed) => {
        $crate::storage::table::Role::Fixed
    };
    (set) => {
        $crate::storage::table::Role::Set
    };
    (computed, $expression:literal) => {
        $crate::storage::table::Role::Computed($expression)
    };
}

/// Declares a table's columns once; see the module's documentation.
macro_rules! table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $row:ident in $table:ident = $name:literal {
            $(
                $(#[$field_meta:meta])*
                $role:ident $field:ident $(as $column:literal)? : $ty:ty $(= $expression:literal)?
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(::serde::Deserialize)]
        $vis struct $row {
            $(
                $(#[$field_meta])*
                $(#[serde(rename = $column)])?
                pub(super) $field: $ty,
            )+
        }

        $vis const $table: $crate::storage::table::Table = $crate::storage::table::Table {
            name: $name,
            columns: &[
                $(
                    $crate::storage::table::Column {
                        name: $crate::storage::table::column_name!($field $(, $column)?),
                        role: $crate::storage::table::role!($role $(, $expression)?),
                    },
                )+
            ],
        };

        impl $crate::storage::table::Row for $row {
            const TABLE: &'static $crate::storage::table::Table = &$table;

            fn values(&self) -> Vec<$crate::storage::Arg<'_>> {
                vec![$($crate::storage::table::ToArg::to_arg(&self.$field)),+]
            }
        }
    };
}

pub(crate) use {column_name, role, table};

#[cfg(test)]
mod tests {
    use super::*;

    table! {
        /// A table for the tests.
        pub(super) struct ThingRow in THINGS = "things" {
            key uuid: String,
            fixed owner: String,
            fixed kind as "type": String,
            set name: String,
            set size: i64,
            set meta_json: Option<String>,
            computed tags: String = "(SELECT json_group_array(t.tag) FROM thing_tags t WHERE t.thing = {t}.uuid)",
            fixed created_at: String,
            set modified_at: String,
        }
    }

    fn thing() -> ThingRow {
        ThingRow {
            uuid: "u".into(),
            owner: "o".into(),
            kind: "k".into(),
            name: "n".into(),
            size: 3,
            meta_json: None,
            tags: "[]".into(),
            created_at: "c".into(),
            modified_at: "m".into(),
        }
    }

    fn texts(sql: &Sql) -> Vec<String> {
        sql.args()
            .iter()
            .map(|a| match a {
                Arg::Text(t) => t.to_string(),
                Arg::Int(i) => i.to_string(),
                Arg::Real(f) => f.to_string(),
                Arg::Null => "NULL".into(),
            })
            .collect()
    }

    /// The highest `?N` a statement names: D1 wants exactly that many arguments.
    fn highest_placeholder(text: &str) -> usize {
        let mut highest = 0;
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'?' {
                let digits: String = text[i + 1..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                highest = highest.max(digits.parse().unwrap_or(0));
            }
        }
        highest
    }

    fn check_count(sql: &Sql) {
        assert_eq!(
            highest_placeholder(sql.text()),
            sql.args().len(),
            "{}",
            sql.text()
        );
    }

    #[test]
    fn select_lists_every_column_with_its_alias() {
        assert_eq!(
            THINGS.select("x"),
            "x.uuid, x.owner, x.type, x.name, x.size, x.meta_json, \
             (SELECT json_group_array(t.tag) FROM thing_tags t WHERE t.thing = x.uuid) AS tags, \
             x.created_at, x.modified_at"
        );
        assert!(THINGS.select("").starts_with("uuid, owner, type, "));
        assert!(THINGS.select("").contains("t.thing = things.uuid) AS tags"));
    }

    #[test]
    fn insert_binds_each_written_column_at_its_placeholder() {
        let row = thing();
        let sql = Sql::insert(&row, vec![("secret", Arg::Text("s"))]);
        assert_eq!(
            sql.text(),
            "INSERT INTO things (uuid, owner, type, name, size, meta_json, created_at, modified_at, secret) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        );
        assert_eq!(
            texts(&sql),
            ["u", "o", "k", "n", "3", "NULL", "c", "m", "s"]
        );
        assert_eq!(sql.param("owner"), "?2");
        assert_eq!(sql.param("secret"), "?9");
        check_count(&sql);
    }

    #[test]
    fn insert_select_replaces_values_and_keeps_their_arguments() {
        let row = thing();
        let mut sql = Sql::insert_select(&row, &[("owner", "a")]);
        let owner = sql.param("owner");
        sql.push(&format!(" FROM (SELECT {owner} AS a) WHERE a IS NOT NULL"));
        assert_eq!(
            sql.text(),
            "INSERT INTO things (uuid, owner, type, name, size, meta_json, created_at, modified_at) \
             SELECT ?1, a, ?3, ?4, ?5, ?6, ?7, ?8 FROM (SELECT ?2 AS a) WHERE a IS NOT NULL"
        );
        assert_eq!(texts(&sql), ["u", "o", "k", "n", "3", "NULL", "c", "m"]);
        check_count(&sql);
    }

    #[test]
    fn update_sets_the_set_columns_where_the_key_matches() {
        let row = thing();
        let mut sql = Sql::update(&row);
        let owner = sql.bind(Arg::Text("o"));
        sql.push(&format!(" AND owner = {owner}"));
        assert_eq!(
            sql.text(),
            "UPDATE things SET name = ?1, size = ?2, meta_json = ?3, modified_at = ?4 \
             WHERE uuid = ?5 AND owner = ?6"
        );
        assert_eq!(texts(&sql), ["n", "3", "NULL", "m", "u", "o"]);
        check_count(&sql);
    }

    #[test]
    fn an_update_of_some_fields_writes_only_those() {
        let before = thing();
        let mut after = thing();
        after.size = 4;
        after.modified_at = "m2".into();
        let patches = Sql::json_patches(&before, &after);
        let sql = Sql::update_changed(&before, &after, &patches);
        assert_eq!(
            sql.text(),
            "UPDATE things SET size = ?1, modified_at = ?2 WHERE uuid = ?3"
        );
        assert_eq!(texts(&sql), ["4", "m2", "u"]);
        check_count(&sql);
    }

    #[test]
    fn an_update_of_some_keys_of_a_json_object_patches_only_those() {
        let mut before = thing();
        before.meta_json = Some(r#"{"a":1,"b":2}"#.into());
        let mut after = thing();
        after.meta_json = Some(r#"{"a":1,"b":3}"#.into());
        let patches = Sql::json_patches(&before, &after);
        let sql = Sql::update_changed(&before, &after, &patches);
        assert_eq!(
            sql.text(),
            "UPDATE things SET meta_json = json_patch(COALESCE(meta_json, '{}'), ?1) WHERE uuid = ?2"
        );
        assert_eq!(texts(&sql), [r#"{"b":3}"#, "u"]);
        check_count(&sql);
        // Set where there was none: written whole.
        let patches = Sql::json_patches(&thing(), &after);
        let sql = Sql::update_changed(&thing(), &after, &patches);
        assert_eq!(
            sql.text(),
            "UPDATE things SET meta_json = ?1 WHERE uuid = ?2"
        );
    }

    #[test]
    fn an_update_that_changes_nothing_writes_nothing() {
        let patches = Sql::json_patches(&thing(), &thing());
        let (before, after) = (thing(), thing());
        let sql = Sql::update_changed(&before, &after, &patches);
        assert_eq!(sql.text(), "UPDATE things SET uuid = uuid WHERE uuid = ?1");
        check_count(&sql);
    }

    #[test]
    fn overwrite_writes_every_column_but_the_key_on_a_conflict() {
        let row = thing();
        let sql = Sql::overwrite(&row);
        assert!(
            sql.text().starts_with("INSERT INTO things ("),
            "{}",
            sql.text()
        );
        assert!(
            sql.text().ends_with(
                "ON CONFLICT (uuid) DO UPDATE SET owner = excluded.owner, type = excluded.type, \
             name = excluded.name, size = excluded.size, meta_json = excluded.meta_json, \
             created_at = excluded.created_at, modified_at = excluded.modified_at"
            ),
            "{}",
            sql.text()
        );
        check_count(&sql);
    }

    #[test]
    fn upsert_updates_the_set_columns_on_a_key_conflict() {
        let row = thing();
        let sql = Sql::upsert(&row);
        assert!(sql.text().ends_with(
            "ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, size = excluded.size, \
             meta_json = excluded.meta_json, modified_at = excluded.modified_at"
        ));
        check_count(&sql);
    }

    #[test]
    fn upsert_keeping_leaves_a_kept_column_as_stored_when_the_row_has_none() {
        let row = thing();
        let sql = Sql::upsert_keeping(&row, &["meta_json"]);
        assert!(sql.text().ends_with(
            "ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, size = excluded.size, \
             meta_json = COALESCE(excluded.meta_json, meta_json), modified_at = excluded.modified_at"
        ));
        check_count(&sql);
    }

    #[test]
    fn update_columns_pairs_each_column_with_its_value() {
        let mut sql = Sql::update_columns(
            &THINGS,
            vec![("name", Arg::Text("x")), ("size", Arg::Int(4))],
        );
        let key = sql.bind(Arg::Text("u"));
        sql.push(&format!(" WHERE uuid = {key}"));
        assert_eq!(
            sql.text(),
            "UPDATE things SET name = ?1, size = ?2 WHERE uuid = ?3"
        );
        check_count(&sql);
    }

    #[test]
    fn insert_rows_numbers_every_tuple() {
        let rows = [thing(), thing()];
        let sql = Sql::insert_rows(&rows);
        assert!(sql.text().ends_with(
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8), (?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
        ));
        assert_eq!(sql.args().len(), 16);
        check_count(&sql);
        assert_eq!(Sql::rows_per_insert::<ThingRow>(), 12);
    }

    #[test]
    fn insert_rows_with_parent_keeps_only_rows_whose_parent_exists() {
        let rows = [thing(), thing()];
        let sql = Sql::insert_rows_with_parent(&rows, "owner", "owners");
        assert_eq!(
            sql.text(),
            "INSERT INTO things (uuid, owner, type, name, size, meta_json, created_at, modified_at) \
             SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, \
             v.column7, v.column8 FROM (VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8), \
             (?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)) AS v \
             WHERE EXISTS (SELECT 1 FROM owners p WHERE p.uuid = v.column2)"
        );
        assert_eq!(sql.args().len(), 16);
        check_count(&sql);
    }

    #[test]
    fn insert_json_rows_binds_shared_columns_once_and_reads_the_rest_from_the_array() {
        let rows = r#"[{"uuid": "a", "type": "k", "name": "n", "size": 1}]"#;
        let sql = Sql::insert_json_rows::<ThingRow>(
            vec![("created_at", Arg::Text("c")), ("owner", Arg::Text("o"))],
            rows,
        );
        assert_eq!(
            sql.text(),
            "INSERT INTO things (uuid, owner, type, name, size, meta_json, created_at, modified_at) \
             SELECT json_extract(j.value, '$.uuid'), ?1, json_extract(j.value, '$.type'), \
             json_extract(j.value, '$.name'), json_extract(j.value, '$.size'), \
             json_extract(j.value, '$.meta_json'), ?2, json_extract(j.value, '$.modified_at') \
             FROM json_each(?3) j"
        );
        assert_eq!(texts(&sql), ["o", "c", rows]);
        check_count(&sql);
    }

    #[test]
    fn rows_deserialize_by_column_name() {
        let row: ThingRow = serde_json::from_value(serde_json::json!({
            "uuid": "u", "owner": "o", "type": "k", "name": "n", "size": 3, "meta_json": null,
            "tags": "[]", "created_at": "c", "modified_at": "m"
        }))
        .unwrap();
        assert_eq!(row.kind, "k");
        assert_eq!(row.values().len(), THINGS.columns.len());
    }
}
