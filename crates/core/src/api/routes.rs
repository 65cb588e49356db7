//! The route table: every endpoint of the service, readable at a glance. Matching is pure so
//! it is tested natively; `app` dispatches each `Endpoint` to its handler.

pub use crate::domain::api_key::Scope;

/// Who may call an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No credentials (readiness checks, the API description, visitor tokens).
    Public,
    /// An account key whose scopes open this one (`Scope::grants`: `admin` opens everything,
    /// `manage` all but keys, `chat` the `Chat` routes, `read` every `GET` but keys). The
    /// operator's `ADMIN_TOKEN` opens the `Key(Admin)` routes (key management) and no other.
    Key(Scope),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Health,
    OpenApi,
    ApiKeyCreate,
    ApiKeyList,
    ApiKeyDelete,
    ApiKeyCurrent,
    ChatbotCreate,
    ChatbotList,
    ChatbotGet,
    ChatbotUpdate,
    ChatbotDelete,
    AgentList,
    AgentCreate,
    AgentUpdate,
    AgentDelete,
    SourceCreateQa,
    SourceCreateUrl,
    SourceUpload,
    SourceList,
    SourceGet,
    SourceRetitle,
    SourceDelete,
    SourceDeleteMany,
    SourceRescrape,
    CrawlCreate,
    CrawlList,
    CrawlGet,
    CrawlSync,
    CrawlUpdate,
    CrawlDelete,
    SourceTagCreate,
    SourceTagList,
    SourceTagUpdate,
    SourceTagDelete,
    Search,
    SessionCreate,
    SessionGet,
    SessionList,
    SessionDelete,
    SessionMessages,
    MessageStream,
    MessageNonStream,
    MessageDelete,
    MessageDeleteMany,
    ModelList,
    ToolFunctionCreate,
    ToolFunctionList,
    ToolFunctionUpdate,
    ToolFunctionDelete,
    LiveChatStart,
    LiveChatMessage,
    LiveChatEnd,
    WidgetToken,
    MessageGet,
    MessageFollow,
    MessageStop,
    SessionEvents,
    FeedbackCreate,
    FeedbackList,
    SessionTranscript,
    WebhookCreate,
    WebhookList,
    WebhookUpdate,
    WebhookRotateSecret,
    WebhookDelete,
    WebhookDeliveries,
    WebhookTest,
    UnansweredQuestions,
    Analytics,
    Export,
    OpenAiChatCompletions,
    OpenAiModels,
    OpenAiModel,
}

pub struct Route {
    pub method: &'static str,
    /// Segments in braces capture one path segment, in order.
    pub path: &'static str,
    pub endpoint: Endpoint,
    pub access: Access,
}

const fn route(
    method: &'static str,
    path: &'static str,
    endpoint: Endpoint,
    access: Access,
) -> Route {
    Route {
        method,
        path,
        endpoint,
        access,
    }
}

use Access::*;
use Endpoint::*;
use Scope::*;

pub const API_PREFIX: &str = "/api/v1";

/// Each route's last argument is who may call it: `Public`, or `Key(scope)` with the narrowest
/// scope that opens it (`Admin` for keys, `Manage` for configuration, `Chat` for sessions and
/// messages; a `GET` is also open to `read` keys unless it is `Admin`). A new route is one
/// more line here, its scope included, and a path in `public/openapi.json`.
#[rustfmt::skip]
pub const ROUTES: &[Route] = &[
    route("GET",    "/health",                          Health,        Public),
    route("GET",    "/api/v1/health",                   Health,        Public),
    route("GET",    "/api/v1/openapi.json",             OpenApi,       Public),

    route("POST",   "/api/v1/api-key/create",           ApiKeyCreate,  Key(Admin)),
    route("GET",    "/api/v1/api-keys",                 ApiKeyList,    Key(Admin)),
    route("DELETE", "/api/v1/api-key/{uuid}/delete",    ApiKeyDelete,  Key(Admin)),
    // Every key may read its own record (a `Chat` GET opens to every scope).
    route("GET",    "/api/v1/api-key/current",          ApiKeyCurrent, Key(Chat)),

    route("POST",   "/api/v1/chatbot/create",           ChatbotCreate, Key(Manage)),
    route("GET",    "/api/v1/chatbots",                 ChatbotList,   Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}",           ChatbotGet,    Key(Manage)),
    route("POST",   "/api/v1/chatbot/{uuid}/update",    ChatbotUpdate, Key(Manage)),
    route("DELETE", "/api/v1/chatbot/{uuid}/delete",    ChatbotDelete, Key(Manage)),

    route("GET",    "/api/v1/chatbot/{uuid}/agents",       AgentList,   Key(Manage)),
    route("POST",   "/api/v1/chatbot/{uuid}/agent/create", AgentCreate, Key(Manage)),
    route("POST",   "/api/v1/agent/{uuid}/update",         AgentUpdate, Key(Manage)),
    route("DELETE", "/api/v1/agent/{uuid}/delete",         AgentDelete, Key(Manage)),

    route("POST",   "/api/v1/chatbot/{uuid}/data-source/qa",     SourceCreateQa,   Key(Manage)),
    route("POST",   "/api/v1/chatbot/{uuid}/data-source/url",    SourceCreateUrl,  Key(Manage)),
    route("POST",   "/api/v1/chatbot/{uuid}/data-source/upload", SourceUpload,     Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}/data-sources",       SourceList,       Key(Manage)),
    route("GET",    "/api/v1/data-source/{uuid}",                SourceGet,        Key(Manage)),
    route("POST",   "/api/v1/data-source/{uuid}/update",         SourceRetitle,    Key(Manage)),
    route("POST",   "/api/v1/data-source/{uuid}/delete",         SourceDelete,     Key(Manage)),
    route("POST",   "/api/v1/data-sources/delete",               SourceDeleteMany, Key(Manage)),
    route("POST",   "/api/v1/data-sources/url/re-scrape",        SourceRescrape,   Key(Manage)),

    route("POST",   "/api/v1/chatbot/{uuid}/data-source/crawl",  CrawlCreate,      Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}/crawls",             CrawlList,        Key(Manage)),
    route("GET",    "/api/v1/crawl/{uuid}",                      CrawlGet,         Key(Manage)),
    route("POST",   "/api/v1/crawl/{uuid}/sync",                 CrawlSync,        Key(Manage)),
    route("POST",   "/api/v1/crawl/{uuid}/update",               CrawlUpdate,      Key(Manage)),
    route("DELETE", "/api/v1/crawl/{uuid}/delete",               CrawlDelete,      Key(Manage)),

    route("POST",   "/api/v1/chatbot/{uuid}/source-tag/create",  SourceTagCreate,  Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}/source-tags",        SourceTagList,    Key(Manage)),
    route("POST",   "/api/v1/source-tag/{uuid}/update",          SourceTagUpdate,  Key(Manage)),
    route("DELETE", "/api/v1/source-tag/{uuid}/delete",          SourceTagDelete,  Key(Manage)),

    route("POST",   "/api/v1/chatbot/{uuid}/search",             Search,           Key(Manage)),

    route("POST",   "/api/v1/chatbot/{uuid}/session/create",     SessionCreate,    Key(Chat)),
    route("GET",    "/api/v1/chatbot/{uuid}/sessions",           SessionList,      Key(Chat)),
    route("GET",    "/api/v1/session/{uuid}",                    SessionGet,       Key(Chat)),
    route("POST",   "/api/v1/session/{uuid}/delete",             SessionDelete,    Key(Chat)),
    route("GET",    "/api/v1/session/{uuid}/messages",           SessionMessages,  Key(Chat)),
    route("POST",   "/api/v1/session/{uuid}/message/stream",     MessageStream,    Key(Chat)),
    route("POST",   "/api/v1/session/{uuid}/message/non-stream", MessageNonStream, Key(Chat)),
    route("POST",   "/api/v1/message/{uuid}/delete",             MessageDelete,    Key(Chat)),
    route("POST",   "/api/v1/messages/delete",                   MessageDeleteMany, Key(Chat)),
    route("GET",    "/api/v1/agent/models",                      ModelList,        Key(Manage)),

    route("POST",   "/api/v1/agent/{uuid}/tool-function/create", ToolFunctionCreate, Key(Manage)),
    route("GET",    "/api/v1/agent/{uuid}/tool-functions",       ToolFunctionList,   Key(Manage)),
    route("POST",   "/api/v1/tool-function/{uuid}/update",       ToolFunctionUpdate, Key(Manage)),
    route("DELETE", "/api/v1/tool-function/{uuid}/delete",       ToolFunctionDelete, Key(Manage)),

    route("POST",   "/api/v1/session/{uuid}/live-chat/start",    LiveChatStart,    Key(Chat)),
    route("POST",   "/api/v1/session/{uuid}/live-chat/message",  LiveChatMessage,  Key(Chat)),
    route("POST",   "/api/v1/session/{uuid}/live-chat/end",      LiveChatEnd,      Key(Chat)),

    route("GET",    "/api/v1/message/{uuid}",                    MessageGet,       Key(Chat)),
    route("GET",    "/api/v1/message/{uuid}/stream",             MessageFollow,    Key(Chat)),
    route("POST",   "/api/v1/message/{uuid}/stop",               MessageStop,      Key(Chat)),
    route("GET",    "/api/v1/session/{uuid}/events",             SessionEvents,    Key(Chat)),
    route("POST",   "/api/v1/message/{uuid}/feedback",           FeedbackCreate,   Key(Chat)),
    route("GET",    "/api/v1/chatbot/{uuid}/feedback",           FeedbackList,     Key(Manage)),
    route("GET",    "/api/v1/session/{uuid}/messages/plain-text", SessionTranscript, Key(Chat)),

    route("POST",   "/api/v1/chatbot/{uuid}/webhook/create",     WebhookCreate,    Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}/webhooks",           WebhookList,      Key(Manage)),
    route("POST",   "/api/v1/webhook/{uuid}/update",             WebhookUpdate,    Key(Manage)),
    route("POST",   "/api/v1/webhook/{uuid}/rotate-secret",      WebhookRotateSecret, Key(Manage)),
    route("DELETE", "/api/v1/webhook/{uuid}/delete",             WebhookDelete,    Key(Manage)),
    route("GET",    "/api/v1/webhook/{uuid}/deliveries",         WebhookDeliveries, Key(Manage)),
    route("POST",   "/api/v1/webhook/{uuid}/test",               WebhookTest,      Key(Manage)),

    route("GET",    "/api/v1/chatbot/{uuid}/unanswered",         UnansweredQuestions, Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}/analytics",          Analytics,        Key(Manage)),
    route("GET",    "/api/v1/chatbot/{uuid}/export",             Export,           Key(Manage)),

    // Site visitors: a short-lived token instead of an API key (see `widget`).
    route("POST",   "/api/v1/widget/{uuid}/token",               WidgetToken,      Public),

    // OpenAI's Chat Completions, for clients that already speak it (base URL `/api/v1/openai`);
    // an account key or a visitor token (for its own chatbot).
    route("POST",   "/api/v1/openai/chat/completions",           OpenAiChatCompletions, Key(Chat)),
    route("GET",    "/api/v1/openai/models",                     OpenAiModels,          Key(Chat)),
    route("GET",    "/api/v1/openai/models/{uuid}",              OpenAiModel,           Key(Chat)),
];

/// Where the OpenAI-compatible endpoints live; their errors take OpenAI's shape.
pub const OPENAI_PREFIX: &str = "/api/v1/openai/";

pub fn is_openai_path(path: &str) -> bool {
    path.starts_with(OPENAI_PREFIX)
}

#[derive(Debug, PartialEq, Eq)]
pub enum RouteMatch {
    Found {
        endpoint: Endpoint,
        access: Access,
        params: Vec<String>,
    },
    /// The path exists but not for this method; the methods it does take.
    MethodNotAllowed(Vec<&'static str>),
    NotFound,
}

/// Captures of `pattern` against `path`, or `None` when they do not match. A literal segment
/// wins over a placeholder, so `/agent/models` is never read as an agent uuid "models".
fn captures(pattern: &str, path: &str) -> Option<Vec<String>> {
    let mut pattern_segments = pattern.split('/');
    let mut path_segments = path.split('/');
    let mut params = Vec::new();
    loop {
        match (pattern_segments.next(), path_segments.next()) {
            (None, None) => return Some(params),
            (Some(p), Some(s)) if p.starts_with('{') && p.ends_with('}') => {
                if s.is_empty() {
                    return None;
                }
                params.push(s.to_string());
            }
            (Some(p), Some(s)) if p == s => {}
            _ => return None,
        }
    }
}

fn literal_count(pattern: &str) -> usize {
    pattern.split('/').filter(|s| !s.starts_with('{')).count()
}

pub fn match_route(method: &str, raw_path: &str) -> RouteMatch {
    // One trailing slash is tolerated, as most HTTP clients and proxies treat it as the same path.
    let path = match raw_path.strip_suffix('/') {
        Some(trimmed) if !trimmed.is_empty() => trimmed,
        _ => raw_path,
    };
    // The most literal pattern that fits decides, whatever the method: `GET /chatbot/create` is
    // the create path used wrongly (405), not a chatbot whose uuid is "create".
    let candidates: Vec<(&Route, Vec<String>)> = ROUTES
        .iter()
        .filter_map(|route| captures(route.path, path).map(|params| (route, params)))
        .collect();
    let Some(best) = candidates.iter().map(|(r, _)| literal_count(r.path)).max() else {
        return RouteMatch::NotFound;
    };
    let mut allowed: Vec<&'static str> = Vec::new();
    for (route, params) in candidates {
        if literal_count(route.path) != best {
            continue;
        }
        // HEAD is GET without the body (the runtime drops it), as HTTP asks of every GET.
        if route.method == method || (method == "HEAD" && route.method == "GET") {
            return RouteMatch::Found {
                endpoint: route.endpoint,
                access: route.access,
                params,
            };
        }
        if !allowed.contains(&route.method) {
            allowed.push(route.method);
        }
    }
    RouteMatch::MethodNotAllowed(allowed)
}

/// The path pattern `endpoint` is served at for `method`, for logs (it names the route without
/// the ids in it).
pub fn route_pattern(method: &str, endpoint: Endpoint) -> Option<&'static str> {
    ROUTES
        .iter()
        .find(|r| r.endpoint == endpoint && r.method == method)
        .map(|r| r.path)
}

/// What a site visitor's token opens (see `widget`): a new session on its chatbot, and the
/// messages, answer stream and ratings of sessions the visitor created. Each of these also
/// takes an account key, with the route's own `Access`.
pub const VISITOR_ENDPOINTS: &[Endpoint] = &[
    SessionCreate,
    SessionMessages,
    MessageStream,
    MessageGet,
    MessageFollow,
    MessageStop,
    SessionEvents,
    FeedbackCreate,
];

pub fn admits_visitors(endpoint: Endpoint) -> bool {
    VISITOR_ENDPOINTS.contains(&endpoint)
}

/// Endpoints a visitor token opens: the chat routes above, and the OpenAI-compatible ones for
/// the visitor's own chatbot (those are for programs, so they get no CORS answers).
pub fn takes_visitor_tokens(endpoint: Endpoint) -> bool {
    admits_visitors(endpoint)
        || matches!(endpoint, OpenAiChatCompletions | OpenAiModels | OpenAiModel)
}

/// What the `{uuid}` in an endpoint's path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    Chatbot,
    Session,
    Message,
    /// Anything else, or no uuid at all.
    Other,
}

/// What `endpoint`'s `{uuid}` names, read from the segment before it in the route table
/// (`/chatbot/{uuid}/...` and `/widget/{uuid}/...`: a chatbot), so a route added to the
/// table is looked up by what its path says.
pub fn named_by(endpoint: Endpoint) -> Named {
    let Some(route) = ROUTES.iter().find(|r| r.endpoint == endpoint) else {
        return Named::Other;
    };
    let mut segments = route.path.split('/');
    let before = segments.by_ref().take_while(|s| *s != "{uuid}").last();
    match before {
        Some("chatbot" | "widget") => Named::Chatbot,
        Some("session") => Named::Session,
        Some("message") => Named::Message,
        _ => Named::Other,
    }
}

/// The route a CORS preflight (`OPTIONS` naming `requested_method`) asks about, when a site
/// visitor's browser may call it from another origin.
pub fn visitor_route(requested_method: &str, path: &str) -> Option<(Endpoint, Vec<String>)> {
    match match_route(requested_method, path) {
        RouteMatch::Found {
            endpoint, params, ..
        } if admits_visitors(endpoint) || endpoint == WidgetToken => Some((endpoint, params)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(method: &str, path: &str) -> (Endpoint, Vec<String>) {
        match match_route(method, path) {
            RouteMatch::Found {
                endpoint, params, ..
            } => (endpoint, params),
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    #[test]
    fn matches_literal_and_placeholder_paths() {
        assert_eq!(found("POST", "/api/v1/chatbot/create").0, ChatbotCreate);
        assert_eq!(
            found("GET", "/api/v1/chatbot/abc"),
            (ChatbotGet, vec!["abc".to_string()])
        );
        assert_eq!(
            found("GET", "/api/v1/chatbot/abc/agents"),
            (AgentList, vec!["abc".to_string()])
        );
        assert_eq!(found("GET", "/api/v1/chatbot/abc/").0, ChatbotGet);
    }

    #[test]
    fn literal_segments_beat_placeholders() {
        assert!(literal_count("/api/v1/agent/models") > literal_count("/api/v1/agent/{uuid}"));
        assert_eq!(
            captures("/api/v1/agent/{uuid}", "/api/v1/agent/models"),
            Some(vec!["models".to_string()])
        );
    }

    #[test]
    fn wrong_method_lists_the_allowed_ones() {
        assert_eq!(
            match_route("GET", "/api/v1/chatbot/create"),
            RouteMatch::MethodNotAllowed(vec!["POST"])
        );
        assert_eq!(
            match_route("POST", "/api/v1/chatbot/abc"),
            RouteMatch::MethodNotAllowed(vec!["GET"])
        );
        assert_eq!(
            match_route("HEAD", "/api/v1/chatbot/create"),
            RouteMatch::MethodNotAllowed(vec!["POST"])
        );
    }

    #[test]
    fn head_is_served_wherever_get_is() {
        assert!(matches!(
            match_route("HEAD", "/api/v1/chatbot/abc"),
            RouteMatch::Found { params, .. } if params == ["abc"]
        ));
    }

    #[test]
    fn unknown_paths_are_not_found() {
        assert_eq!(match_route("GET", "/api/v1/nothing"), RouteMatch::NotFound);
        assert_eq!(
            match_route("GET", "/api/v1/chatbot//agents"),
            RouteMatch::NotFound
        );
        assert_eq!(match_route("GET", "/"), RouteMatch::NotFound);
        assert_eq!(match_route("GET", "/api/v2/chatbots"), RouteMatch::NotFound);
    }

    #[test]
    fn every_route_is_reachable_by_its_own_method_and_path() {
        for route in ROUTES {
            let path = route
                .path
                .replace("{uuid}", "00000000-0000-4000-8000-000000000000");
            match match_route(route.method, &path) {
                RouteMatch::Found { endpoint, .. } => {
                    assert_eq!(endpoint, route.endpoint, "{path}")
                }
                other => panic!("{} {path}: {other:?}", route.method),
            }
        }
    }

    #[test]
    fn only_health_the_api_description_and_visitor_tokens_are_public() {
        for route in ROUTES {
            assert_eq!(
                route.access == Public,
                matches!(route.endpoint, Health | OpenApi | WidgetToken),
                "{}",
                route.path
            );
        }
    }

    /// Keys are managed with `admin` only; `read` opens every other `GET` and nothing else;
    /// `chat` opens sessions and messages only.
    #[test]
    fn scopes_follow_the_table() {
        use crate::domain::api_key::Scope;
        for route in ROUTES {
            let Key(needed) = route.access else { continue };
            let is_key_route = route.path.contains("/api-key") && route.endpoint != ApiKeyCurrent;
            assert_eq!(needed == Admin, is_key_route, "{}", route.path);
            assert_eq!(
                Scope::Read.grants(needed, route.method),
                route.method == "GET" && !is_key_route,
                "{}",
                route.path
            );
            let chat_route = route.path.contains("/session")
                || route.path.contains("/message")
                || route.path.contains("/openai/")
                || route.endpoint == ApiKeyCurrent;
            assert_eq!(
                Scope::Chat.grants(needed, route.method),
                chat_route,
                "{}",
                route.path
            );
            assert_eq!(Scope::Manage.grants(needed, route.method), !is_key_route);
            assert!(Scope::Admin.grants(needed, route.method));
        }
    }

    /// A visitor's token opens a new session, its messages, the answer stream and ratings: no
    /// more.
    #[test]
    fn visitors_reach_only_their_chat() {
        let visitor: Vec<&str> = ROUTES
            .iter()
            .filter(|r| admits_visitors(r.endpoint))
            .map(|r| r.path)
            .collect();
        assert_eq!(
            visitor,
            vec![
                "/api/v1/chatbot/{uuid}/session/create",
                "/api/v1/session/{uuid}/messages",
                "/api/v1/session/{uuid}/message/stream",
                "/api/v1/message/{uuid}",
                "/api/v1/message/{uuid}/stream",
                "/api/v1/message/{uuid}/stop",
                "/api/v1/session/{uuid}/events",
                "/api/v1/message/{uuid}/feedback"
            ]
        );
        let id = "00000000-0000-4000-8000-000000000000";
        assert_eq!(
            visitor_route("POST", &format!("/api/v1/session/{id}/message/stream")),
            Some((MessageStream, vec![id.to_string()]))
        );
        assert_eq!(
            visitor_route("POST", &format!("/api/v1/widget/{id}/token")),
            Some((WidgetToken, vec![id.to_string()]))
        );
        assert_eq!(
            visitor_route("GET", &format!("/api/v1/session/{id}/message/stream")),
            None
        );
        assert_eq!(visitor_route("GET", &format!("/api/v1/chatbot/{id}")), None);
        assert_eq!(visitor_route("GET", "/api/v1/health"), None);
    }

    #[test]
    fn every_visitor_route_names_a_chatbot_a_session_or_a_message() {
        for endpoint in VISITOR_ENDPOINTS.iter().chain([&WidgetToken]) {
            assert_ne!(named_by(*endpoint), Named::Other, "{endpoint:?}");
        }
        assert_eq!(named_by(MessageFollow), Named::Message);
        assert_eq!(named_by(MessageStop), Named::Message);
        assert_eq!(named_by(SessionEvents), Named::Session);
        assert_eq!(named_by(SessionCreate), Named::Chatbot);
        assert_eq!(named_by(Health), Named::Other);
    }

    /// The OpenAPI document and the route table list exactly the same operations.
    #[test]
    fn openapi_document_matches_the_route_table() {
        use std::collections::BTreeSet;
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../../../public/openapi.json"))
                .expect("openapi.json parses");
        assert_eq!(doc["openapi"], "3.1.0");
        let paths = doc["paths"].as_object().expect("paths is an object");
        const METHODS: &[&str] = &[
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ];
        let documented: BTreeSet<(String, String)> = paths
            .iter()
            .flat_map(|(path, item)| {
                let item = item.as_object().expect("a path item is an object");
                item.keys()
                    .filter(|k| METHODS.contains(&k.as_str()))
                    .map(|m| (m.to_ascii_uppercase(), path.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let routed: BTreeSet<(String, String)> = ROUTES
            .iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        assert_eq!(
            routed.len(),
            ROUTES.len(),
            "the route table repeats a route"
        );
        let missing: Vec<_> = routed.difference(&documented).collect();
        let extra: Vec<_> = documented.difference(&routed).collect();
        assert!(
            missing.is_empty(),
            "routes missing from openapi.json: {missing:?}"
        );
        assert!(
            extra.is_empty(),
            "openapi.json documents unknown routes: {extra:?}"
        );
        for (path, item) in paths {
            for (method, operation) in item.as_object().into_iter().flatten() {
                if !METHODS.contains(&method.as_str()) {
                    continue;
                }
                assert!(
                    operation["operationId"].is_string(),
                    "{method} {path} has no operationId"
                );
                let public = operation["security"].as_array().is_some_and(Vec::is_empty);
                let access = ROUTES
                    .iter()
                    .find(|r| r.path == path && r.method.eq_ignore_ascii_case(method))
                    .map(|r| r.access);
                assert_eq!(public, access == Some(Public), "{method} {path}: security");
                // The scope a key needs is documented as the table declares it.
                let scope = match access {
                    Some(Key(scope)) => serde_json::Value::from(scope.as_str()),
                    _ => serde_json::Value::Null,
                };
                assert_eq!(operation["x-scope"], scope, "{method} {path}: x-scope");
            }
        }
    }
}
