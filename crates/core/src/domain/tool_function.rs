//! Tool functions: an HTTP endpoint an agent's model may call, described by a JSON object
//! schema for its arguments.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::{Body, MAX_DESCRIPTION_CHARS};
use crate::chat::completion::ToolSpec;
use crate::knowledge::url_guard::{check_address, PrivateAccess};
use crate::string_enum::string_enum;
use serde_json::{json, Map, Value};

string_enum! {
    /// How a tool function's endpoint is called.
    pub enum HttpMethod {
        Get = "GET",
        Post = "POST",
        Put = "PUT",
        Patch = "PATCH",
        Delete = "DELETE",
    }
}

string_enum! {
    /// The JSON Schema types a tool function's parameter may have.
    pub enum ParameterType {
        String = "string",
        Number = "number",
        Integer = "integer",
        Boolean = "boolean",
        Array = "array",
        Object = "object",
        Null = "null",
    }
}

pub const MAX_HEADERS: usize = 50;
pub const MAX_PARAMETERS: usize = 50;
pub const MAX_URL_CHARS: usize = 2_048;
pub const MAX_TOOL_FUNCTIONS_PER_AGENT: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub struct ToolFunction {
    pub uuid: String,
    pub agent_uuid: String,
    pub name: String,
    pub description: String,
    pub enabled: bool,
    pub external_url: String,
    pub method: HttpMethod,
    pub headers: Map<String, Value>,
    pub meta: Map<String, Value>,
    pub parameters: Value,
    pub created_at: String,
    pub modified_at: String,
}

impl ToolFunction {
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "agent_uuid": self.agent_uuid,
            "name": self.name,
            "description": self.description,
            "enabled": u8::from(self.enabled),
            "external_url": self.external_url,
            "method": self.method,
            "headers": self.headers,
            "meta": self.meta,
            "parameters": self.parameters,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }

    /// The record for a key that may read but not change the configuration (`Scope::Read`,
    /// `Scope::Chat`): header values and a password in the URL are credentials to the tool's
    /// backend more often than not, so they read as `HIDDEN` (the names stay, to show what is
    /// sent). A dashboard key that leaks then opens nothing beyond this service.
    pub fn to_json_hidden(&self) -> Value {
        let mut record = self.to_json();
        record["headers"] = self
            .headers
            .keys()
            .map(|name| (name.clone(), Value::from(HIDDEN)))
            .collect::<Map<String, Value>>()
            .into();
        record["external_url"] = hide_password(&self.external_url).into();
        record
    }

    /// `to_json` for a caller that may change the configuration, else `to_json_hidden`.
    pub fn to_json_for(&self, configures: bool) -> Value {
        if configures {
            self.to_json()
        } else {
            self.to_json_hidden()
        }
    }

    /// This function as a tool a model may call.
    pub fn tool_spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }
}

/// Names a model can call: letters, digits, `_` and `-`, at most 64.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// An absolute http or https URL on an address the Worker may call: a private or loopback one
/// is refused here, as for webhooks, rather than only when a model calls the function.
fn parse_url(raw: &str, access: &PrivateAccess) -> ApiResult<String> {
    let url = crate::idn::parse_url(raw.trim()).map_err(|_| {
        ApiError::invalid(
            "external_url",
            "`external_url` must be an absolute http or https URL.",
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(ApiError::invalid(
            "external_url",
            "`external_url` must be an absolute http or https URL.",
        ));
    }
    check_address(&url, access).map_err(|reason| ApiError::invalid("external_url", reason))?;
    Ok(url.to_string())
}

fn parse_headers(value: &Map<String, Value>) -> ApiResult<Map<String, Value>> {
    if value.len() > MAX_HEADERS {
        return Err(ApiError::invalid(
            "headers",
            format!("`headers` may hold at most {MAX_HEADERS} entries."),
        ));
    }
    for (name, v) in value {
        if !valid_header_name(name) {
            return Err(ApiError::invalid(
                "headers",
                format!("{name:?} is not a valid header name."),
            ));
        }
        match v {
            Value::String(s) if s.len() <= 4096 && !s.contains(['\r', '\n']) => {}
            _ => {
                return Err(ApiError::invalid(
                    "headers",
                    format!("The header {name:?} must have a string value on one line."),
                ))
            }
        }
    }
    Ok(value.clone())
}

/// How deep schemas may nest in a function's parameters (an object in an array in an
/// object ...), the top one counted.
pub const MAX_SCHEMA_DEPTH: usize = 8;

/// The keywords whose value is a number.
const NUMERIC_KEYWORDS: [&str; 6] = [
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
];

/// A function's arguments as a JSON object schema: `{type: "object", properties: {name:
/// {type, description, ...}}, required, additionalProperties?}`. Every schema in it is checked
/// (see `check_schema`), since the model provider gets it as it is stored and refuses a whole
/// request over one bad schema (OpenAI: an array without `items`), which would fail every
/// answer of the agent. The top level is kept as those four keys; the schemas under it as sent.
pub fn parse_parameters(value: &Value) -> ApiResult<Value> {
    let bad = |msg: String| ApiError::invalid(PARAMETERS, msg);
    let obj = value
        .as_object()
        .ok_or_else(|| bad("`parameters` must be an object schema.".into()))?;
    match obj.get("type") {
        Some(Value::String(t)) if ParameterType::parse(t) == Some(ParameterType::Object) => {}
        _ => return Err(bad("`parameters.type` must be \"object\".".into())),
    }
    check_schema(obj, PARAMETERS, 1)?;
    let properties = obj
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // The top level's names become JSON keys or query parameters of the call.
    if let Some(name) = properties.keys().find(|name| !valid_name(name)) {
        return Err(bad(format!("{name:?} is not a valid parameter name.")));
    }
    let required = obj.get("required").cloned().unwrap_or_else(|| json!([]));
    let mut schema =
        json!({"type": ParameterType::Object, "properties": properties, "required": required});
    if let Some(additional) = obj.get("additionalProperties") {
        schema["additionalProperties"] = additional.clone();
    }
    Ok(schema)
}

/// The field every error of a function's parameters names.
const PARAMETERS: &str = "parameters";

/// The types a schema's `type` names: one, or an array of several; `None` when it names none,
/// or something else.
fn schema_types(value: Option<&Value>) -> Option<Vec<ParameterType>> {
    match value? {
        Value::String(t) => Some(vec![ParameterType::parse(t)?]),
        Value::Array(types) if !types.is_empty() => types
            .iter()
            .map(|t| t.as_str().and_then(ParameterType::parse))
            .collect(),
        _ => None,
    }
}

/// Checks one schema at `path` (`parameters.properties.tags.items`) and those under it: `type`
/// one of `ParameterType` (or an array of them), an array's `items` a schema, `enum` a
/// non-empty array, `properties` schemas, `required` names of them, the length, size and range
/// keywords numbers, `additionalProperties` a boolean or a schema. Other keywords pass as they
/// are.
fn check_schema(schema: &Map<String, Value>, path: &str, depth: usize) -> ApiResult<()> {
    let bad = |msg: String| ApiError::invalid(PARAMETERS, format!("`{path}`: {msg}"));
    if depth > MAX_SCHEMA_DEPTH {
        return Err(bad(format!(
            "schemas may nest at most {MAX_SCHEMA_DEPTH} levels deep."
        )));
    }
    let types = schema_types(schema.get("type")).ok_or_else(|| {
        bad(format!(
            "`type` must be one of {} (or an array of them).",
            ParameterType::NAMES.join(", ")
        ))
    })?;
    if schema.get("description").is_some_and(|d| !d.is_string()) {
        return Err(bad("`description` must be a string.".into()));
    }
    if let Some(keyword) = NUMERIC_KEYWORDS
        .iter()
        .find(|k| schema.get(**k).is_some_and(|v| !v.is_number()))
    {
        return Err(bad(format!("`{keyword}` must be a number.")));
    }
    match schema.get("enum") {
        None => {}
        Some(Value::Array(values)) if !values.is_empty() => {}
        Some(_) => return Err(bad("`enum` must be a non-empty array.".into())),
    }
    match schema.get("items") {
        Some(Value::Object(items)) => check_schema(items, &format!("{path}.items"), depth + 1)?,
        Some(_) => return Err(bad("`items` must be a schema object.".into())),
        None if types.contains(&ParameterType::Array) => {
            return Err(bad(
                "an array needs `items`, the schema of its elements.".into()
            ))
        }
        None => {}
    }
    let no_properties = Map::new();
    let properties = match schema.get("properties") {
        None => &no_properties,
        Some(Value::Object(p)) => p,
        Some(_) => return Err(bad("`properties` must be an object of schemas.".into())),
    };
    if properties.len() > MAX_PARAMETERS {
        return Err(bad(format!(
            "an object may have at most {MAX_PARAMETERS} properties."
        )));
    }
    for (name, property) in properties {
        let at = format!("{path}.properties.{name}");
        let property = property.as_object().ok_or_else(|| {
            ApiError::invalid(
                PARAMETERS,
                format!("`{at}`: must be a schema object {{type, description}}."),
            )
        })?;
        check_schema(property, &at, depth + 1)?;
    }
    let names_property = |name: &Value| name.as_str().is_some_and(|n| properties.contains_key(n));
    match schema.get("required") {
        None => {}
        Some(Value::Array(names)) if names.iter().all(Value::is_string) => {
            if let Some(unknown) = names.iter().find(|n| !names_property(n)) {
                return Err(bad(format!(
                    "`required` names {unknown}, which is not in `properties`."
                )));
            }
        }
        Some(_) => return Err(bad("`required` must be an array of property names.".into())),
    }
    match schema.get("additionalProperties") {
        None | Some(Value::Bool(_)) => Ok(()),
        Some(Value::Object(extra)) => {
            check_schema(extra, &format!("{path}.additionalProperties"), depth + 1)
        }
        Some(_) => Err(bad(
            "`additionalProperties` must be true, false or a schema object.".into(),
        )),
    }
}

/// What a hidden credential reads as in `ToolFunction::to_json_hidden`.
pub const HIDDEN: &str = "[hidden]";

/// The URL with its password read as `HIDDEN`, written as is: `Url::set_password` would
/// percent-encode its brackets (`%5Bhidden%5D`).
fn hide_password(external_url: &str) -> String {
    match url::Url::parse(external_url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // Only fails for URLs that cannot have a password, which this one has.
            let _ = parsed.set_password(None);
            let mut hidden = parsed.to_string();
            // Without its password the URL reads `scheme://user@host...`, or `scheme://host...`
            // when the user name is empty too.
            let after_user = parsed.scheme().len() + "://".len() + parsed.username().len();
            let marker = if parsed.username().is_empty() {
                format!(":{HIDDEN}@")
            } else {
                format!(":{HIDDEN}")
            };
            hidden.insert_str(after_user, &marker);
            hidden
        }
        _ => external_url.to_string(),
    }
}

/// Validates a create body (`name` and `external_url` required) or applies an update body over
/// `current`. `access` is the operator's rule for private addresses (`ALLOW_PRIVATE_URLS`,
/// `ALLOW_PRIVATE_HOSTS`).
pub fn apply(
    body: &Map<String, Value>,
    current: Option<ToolFunction>,
    new_uuid: String,
    agent_uuid: String,
    access: &PrivateAccess,
    now: String,
) -> ApiResult<ToolFunction> {
    let b = Body(body);
    let creating = current.is_none();
    let mut f = current.unwrap_or_else(|| ToolFunction {
        uuid: new_uuid,
        agent_uuid,
        name: String::new(),
        description: String::new(),
        enabled: true,
        external_url: String::new(),
        method: HttpMethod::Post,
        headers: Map::new(),
        meta: Map::new(),
        parameters: json!({"type": ParameterType::Object, "properties": {}, "required": []}),
        created_at: now.clone(),
        modified_at: now.clone(),
    });
    match b.opt_str("name", 64)? {
        Some(name) if valid_name(name.trim()) => f.name = name.trim().to_string(),
        Some(_) => {
            return Err(ApiError::invalid(
                "name",
                "`name` must be 1 to 64 letters, digits, underscores or hyphens.",
            ))
        }
        None if creating => return Err(ApiError::invalid("name", "`name` is required.")),
        None => {}
    }
    if let Some(d) = b.opt_str("description", MAX_DESCRIPTION_CHARS)? {
        f.description = d;
    }
    if let Some(e) = b.opt_bool("enabled")? {
        f.enabled = e;
    }
    match b.opt_str("external_url", MAX_URL_CHARS)? {
        Some(u) => f.external_url = parse_url(&u, access)?,
        None if creating => {
            return Err(ApiError::invalid(
                "external_url",
                "`external_url` is required.",
            ))
        }
        None => {}
    }
    if let Some(m) = b.opt_str("method", 16)? {
        f.method = HttpMethod::parse(&m.trim().to_ascii_uppercase()).ok_or_else(|| {
            ApiError::invalid(
                "method",
                format!("`method` must be one of: {}.", HttpMethod::NAMES.join(", ")),
            )
        })?;
    }
    if let Some(h) = b.opt_object("headers")? {
        f.headers = parse_headers(h)?;
    }
    if let Some(m) = b.opt_object("meta")? {
        f.meta = m.clone();
    }
    if let Some(p) = b.raw("parameters") {
        f.parameters = parse_parameters(p)?;
    }
    f.modified_at = now;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn create(v: Value) -> ApiResult<ToolFunction> {
        apply(
            &obj(v),
            None,
            "u".into(),
            "a".into(),
            &PrivateAccess::everything(),
            "t".into(),
        )
    }

    #[test]
    fn hidden_record_keeps_names_not_credentials() {
        let f = apply(
            &obj(
                json!({"name": "f", "external_url": "https://bot:s3cret@x.example/q?a=1",
                "headers": {"Authorization": "Bearer live", "X-Trace": "1"}}),
            ),
            None,
            "u".into(),
            "a".into(),
            &PrivateAccess::default(),
            "t".into(),
        )
        .unwrap();
        let hidden = f.to_json_hidden();
        assert_eq!(
            hidden["headers"],
            json!({"Authorization": HIDDEN, "X-Trace": HIDDEN})
        );
        assert_eq!(
            hidden["external_url"], "https://bot:[hidden]@x.example/q?a=1",
            "the marker reads as written, not percent-encoded"
        );
        assert_eq!(
            hide_password("https://:s3cret@x.example:8443/q"),
            "https://:[hidden]@x.example:8443/q"
        );
        assert_eq!(
            hide_password("http://b%40t:p%3Ass@x.example/"),
            "http://b%40t:[hidden]@x.example/"
        );
        assert_eq!(f.to_json()["headers"]["Authorization"], "Bearer live");
        let plain = ToolFunction {
            external_url: "https://x.example/".into(),
            ..f
        };
        assert_eq!(plain.to_json_hidden()["external_url"], "https://x.example/");
    }

    #[test]
    fn create_fills_defaults_and_normalises() {
        let f = create(json!({
            "name": "lookup_order", "external_url": "https://api.example.com/orders", "method": "get",
            "parameters": {"type": "object", "properties": {"order_id": {"description": "the id", "type": "string"}}, "required": ["order_id"]}
        }))
        .unwrap();
        assert_eq!(f.method, HttpMethod::Get);
        assert!(f.enabled);
        assert_eq!(f.to_json()["enabled"], 1);
        assert_eq!(f.parameters["required"], json!(["order_id"]));
        assert_eq!(
            crate::chat::completion::openai::tool_json(&f.tool_spec())["function"]["name"],
            "lookup_order"
        );
    }

    #[test]
    fn bad_input_names_the_field() {
        let base = |extra: Value| {
            let mut v = json!({"name": "f", "external_url": "https://x.example/"});
            if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
                o.extend(e.clone());
            }
            create(v).unwrap_err().field().map(str::to_string)
        };
        assert_eq!(
            create(json!({"external_url": "https://x.example/"}))
                .unwrap_err()
                .field(),
            Some("name")
        );
        assert_eq!(
            create(json!({"name": "f"})).unwrap_err().field(),
            Some("external_url")
        );
        assert_eq!(base(json!({"name": "has space"})).as_deref(), Some("name"));
        assert_eq!(
            base(json!({"external_url": "ftp://x.example/"})).as_deref(),
            Some("external_url")
        );
        assert_eq!(
            base(json!({"external_url": "not a url"})).as_deref(),
            Some("external_url")
        );
        assert_eq!(base(json!({"method": "TRACE"})).as_deref(), Some("method"));
        assert_eq!(
            base(json!({"headers": {"X-Key": 5}})).as_deref(),
            Some("headers")
        );
        assert_eq!(
            base(json!({"headers": {"Bad Name": "v"}})).as_deref(),
            Some("headers")
        );
        assert_eq!(
            base(json!({"headers": {"X": "a\r\nInjected: 1"}})).as_deref(),
            Some("headers")
        );
        assert_eq!(base(json!({"headers": []})).as_deref(), Some("headers"));
        assert_eq!(
            base(json!({"parameters": {"type": "array"}})).as_deref(),
            Some("parameters")
        );
        assert_eq!(
            base(json!({"parameters": {"type": "object", "properties": {"a": {"type": "date"}}}}))
                .as_deref(),
            Some("parameters")
        );
        assert_eq!(
            base(json!({"parameters": {"type": "object", "properties": {}, "required": ["a"]}}))
                .as_deref(),
            Some("parameters")
        );
        assert_eq!(base(json!({"enabled": "yes"})).as_deref(), Some("enabled"));
    }

    #[test]
    fn private_addresses_are_refused_unless_the_operator_allows_them() {
        let with = |url: &str, access: &PrivateAccess| {
            apply(
                &obj(json!({"name": "f", "external_url": url})),
                None,
                "u".into(),
                "a".into(),
                access,
                "t".into(),
            )
        };
        let closed = PrivateAccess::default();
        for url in [
            "http://127.0.0.1:9/x",
            "http://localhost/x",
            "http://10.0.0.7/admin",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/x",
            "https://bot:pw@192.168.1.1/x",
        ] {
            let err = with(url, &closed).expect_err(url);
            assert_eq!(
                (err.status(), err.field()),
                (400, Some("external_url")),
                "{url}"
            );
            assert!(
                err.to_string().contains("private, loopback or link-local"),
                "{url}: {err}"
            );
            assert!(with(url, &PrivateAccess::everything()).is_ok(), "{url}");
        }
        let one_host = PrivateAccess::from_settings(false, "127.0.0.1:9");
        assert!(with("http://127.0.0.1:9/x", &one_host).is_ok());
        assert!(with("http://127.0.0.1:10/x", &one_host).is_err());
        // A public endpoint with credentials for it is still a tool's URL.
        assert!(with("https://bot:pw@api.example.com/x", &closed).is_ok());
        // An update that moves the URL to a private address keeps the record as it was.
        let f = with("https://api.example.com/x", &closed).expect("public");
        let moved = apply(
            &obj(json!({"external_url": "http://localhost/x"})),
            Some(f.clone()),
            String::new(),
            String::new(),
            &closed,
            "t2".into(),
        );
        assert_eq!(moved.unwrap_err().field(), Some("external_url"));
    }

    #[test]
    fn every_schema_in_the_parameters_is_checked_and_the_error_names_its_path() {
        let refused = |properties: Value| {
            let err = parse_parameters(&json!({"type": "object", "properties": properties}))
                .expect_err("refused");
            assert_eq!((err.status(), err.field()), (400, Some("parameters")));
            err.to_string()
        };
        let cases = [
            (
                json!({"tags": {"type": "array"}}),
                "`parameters.properties.tags`: an array needs `items`",
            ),
            (
                json!({"opt": {"type": "string", "items": 5}}),
                "`parameters.properties.opt`: `items` must be a schema object",
            ),
            (
                json!({"opt": {"type": "string", "enum": "notarray"}}),
                "`parameters.properties.opt`: `enum` must be a non-empty array",
            ),
            (
                json!({"opt": {"type": "string", "enum": []}}),
                "`enum` must be a non-empty array",
            ),
            (
                json!({"opt": {"type": "string", "minLength": "x"}}),
                "`parameters.properties.opt`: `minLength` must be a number",
            ),
            (
                json!({"n": {"type": "integer", "maximum": null}}),
                "`maximum` must be a number",
            ),
            (
                json!({"when": {"type": "date"}}),
                "`parameters.properties.when`: `type` must be one of",
            ),
            (
                json!({"when": {"type": ["string", "date"]}}),
                "`type` must be one of",
            ),
            (json!({"when": {"type": []}}), "`type` must be one of"),
            (
                json!({"ids": {"type": "array", "items": {"type": "array"}}}),
                "`parameters.properties.ids.items`: an array needs `items`",
            ),
            (
                json!({"ids": {"type": "array", "items": {"type": "object",
                    "properties": {"n": {"type": "number", "minItems": true}}}}}),
                "`parameters.properties.ids.items.properties.n`: `minItems` must be a number",
            ),
            (
                json!({"o": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}}),
                "`parameters.properties.o`: `required` names \"b\", which is not in `properties`",
            ),
            (
                json!({"o": {"type": "object", "required": [1]}}),
                "`required` must be an array of property names",
            ),
            (
                json!({"o": {"type": "object", "properties": []}}),
                "`properties` must be an object of schemas",
            ),
            (
                json!({"o": {"type": "object", "properties": {"a": "string"}}}),
                "`parameters.properties.o.properties.a`: must be a schema object",
            ),
            (
                json!({"o": {"type": "object", "additionalProperties": "yes"}}),
                "`additionalProperties` must be true, false or a schema object",
            ),
            (
                json!({"o": {"type": "object", "additionalProperties": {"type": "array"}}}),
                "`parameters.properties.o.additionalProperties`: an array needs `items`",
            ),
            (
                json!({"d": {"type": "string", "description": 5}}),
                "`description` must be a string",
            ),
        ];
        for (properties, expected) in cases {
            let message = refused(properties.clone());
            assert!(message.contains(expected), "{properties}: {message}");
        }
        // The parameters are the first level and a property the second: a property may nest
        // MAX_SCHEMA_DEPTH - 2 levels below it, and no more.
        let nested = |levels: usize| {
            let mut deep = json!({"type": "string"});
            for _ in 0..levels {
                deep = json!({"type": "array", "items": deep});
            }
            json!({"type": "object", "properties": {"deep": deep}})
        };
        assert!(parse_parameters(&nested(MAX_SCHEMA_DEPTH - 2)).is_ok());
        let too_deep = parse_parameters(&nested(MAX_SCHEMA_DEPTH - 1)).expect_err("refused");
        assert!(too_deep.to_string().contains("nest at most"));
        let err = parse_parameters(&json!({"type": "object", "additionalProperties": 1}))
            .expect_err("refused");
        assert!(err
            .to_string()
            .contains("`parameters`: `additionalProperties`"));
    }

    #[test]
    fn a_valid_schema_is_kept_with_its_additional_properties() {
        let parameters = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]},
                    "minItems": 1, "maxItems": 3, "description": "labels"},
                "note": {"type": ["string", "null"], "maxLength": 200},
                "size": {"type": "integer", "minimum": 0, "maximum": 10},
                "address": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"], "additionalProperties": false},
                "extra": {"type": "object", "additionalProperties": {"type": "number"}},
            },
            "required": ["tags"],
            "additionalProperties": false,
        });
        assert_eq!(parse_parameters(&parameters).expect("valid"), parameters);
        let f = create(
            json!({"name": "f", "external_url": "https://x.example/", "parameters": parameters}),
        )
        .expect("valid");
        let sent = crate::chat::completion::openai::tool_json(&f.tool_spec());
        assert_eq!(
            sent["function"]["parameters"], parameters,
            "forwarded as stored"
        );
        // A top level without `required` gets an empty one.
        assert_eq!(
            parse_parameters(&json!({"type": "object"})).expect("valid"),
            json!({"type": "object", "properties": {}, "required": []})
        );
    }

    #[test]
    fn an_update_with_a_bad_schema_changes_nothing() {
        let f = create(json!({"name": "f", "external_url": "https://x.example/"})).expect("valid");
        let err = apply(
            &obj(
                json!({"description": "new", "parameters": {"type": "object",
                "properties": {"tags": {"type": "array"}}}}),
            ),
            Some(f.clone()),
            String::new(),
            String::new(),
            &PrivateAccess::default(),
            "t2".into(),
        )
        .expect_err("refused");
        assert_eq!(err.field(), Some("parameters"));
    }

    #[test]
    fn update_changes_only_what_is_sent() {
        let f = create(
            json!({"name": "f", "external_url": "https://x.example/", "headers": {"X-Key": "1"}}),
        )
        .unwrap();
        let g = apply(
            &obj(json!({"enabled": false})),
            Some(f.clone()),
            "ignored".into(),
            "ignored".into(),
            &PrivateAccess::default(),
            "t2".into(),
        )
        .unwrap();
        assert!(!g.enabled);
        assert_eq!(
            (g.uuid.as_str(), g.name.as_str(), g.headers.len()),
            (f.uuid.as_str(), "f", 1)
        );
        assert_eq!(g.modified_at, "t2");
    }
}
