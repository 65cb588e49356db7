//! The route table: every endpoint of the service, readable at a glance. Matching is pure so
//! it is tested natively; `app` dispatches each `Endpoint` to its handler.

/// Who may call an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No credentials (readiness checks, the API description).
    Public,
    /// The operator's `ADMIN_TOKEN` or an account key (key management only).
    AdminOrAccount,
    /// An account key.
    Account,
    /// An account key, checked by the handler inside its first statement rather than by a
    /// lookup of its own: on the hottest routes that saves a whole D1 round trip. The handler
    /// reads or writes through `Call::owner` and reports a miss through `Call::missing`.
    AccountInRead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Health,
    OpenApi,
    ApiKeyCreate,
    ApiKeyList,
    ApiKeyDelete,
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

pub const API_PREFIX: &str = "/api/v1";

#[rustfmt::skip]
pub const ROUTES: &[Route] = &[
    route("GET",    "/health",                          Health,        Public),
    route("GET",    "/api/v1/health",                   Health,        Public),
    route("GET",    "/api/v1/openapi.json",             OpenApi,       Public),

    route("POST",   "/api/v1/api-key/create",           ApiKeyCreate,  AdminOrAccount),
    route("GET",    "/api/v1/api-keys",                 ApiKeyList,    AdminOrAccount),
    route("DELETE", "/api/v1/api-key/{uuid}/delete",    ApiKeyDelete,  AdminOrAccount),

    route("POST",   "/api/v1/chatbot/create",           ChatbotCreate, AccountInRead),
    route("GET",    "/api/v1/chatbots",                 ChatbotList,   Account),
    route("GET",    "/api/v1/chatbot/{uuid}",           ChatbotGet,    AccountInRead),
    route("POST",   "/api/v1/chatbot/{uuid}/update",    ChatbotUpdate, Account),
    route("DELETE", "/api/v1/chatbot/{uuid}/delete",    ChatbotDelete, Account),

    route("GET",    "/api/v1/chatbot/{uuid}/agents",       AgentList,   AccountInRead),
    route("POST",   "/api/v1/chatbot/{uuid}/agent/create", AgentCreate, Account),
    route("POST",   "/api/v1/agent/{uuid}/update",         AgentUpdate, Account),
    route("DELETE", "/api/v1/agent/{uuid}/delete",         AgentDelete, Account),

    route("POST",   "/api/v1/chatbot/{uuid}/data-source/qa",     SourceCreateQa,   Account),
    route("POST",   "/api/v1/chatbot/{uuid}/data-source/url",    SourceCreateUrl,  Account),
    route("POST",   "/api/v1/chatbot/{uuid}/data-source/upload", SourceUpload,     Account),
    route("GET",    "/api/v1/chatbot/{uuid}/data-sources",       SourceList,       Account),
    route("GET",    "/api/v1/data-source/{uuid}",                SourceGet,        Account),
    route("POST",   "/api/v1/data-source/{uuid}/update",         SourceRetitle,    Account),
    route("POST",   "/api/v1/data-source/{uuid}/delete",         SourceDelete,     Account),
    route("POST",   "/api/v1/data-sources/delete",               SourceDeleteMany, Account),
    route("POST",   "/api/v1/data-sources/url/re-scrape",        SourceRescrape,   Account),

    route("POST",   "/api/v1/chatbot/{uuid}/data-source/crawl",  CrawlCreate,      Account),
    route("GET",    "/api/v1/chatbot/{uuid}/crawls",             CrawlList,        Account),
    route("GET",    "/api/v1/crawl/{uuid}",                      CrawlGet,         Account),
    route("POST",   "/api/v1/crawl/{uuid}/sync",                 CrawlSync,        Account),
    route("DELETE", "/api/v1/crawl/{uuid}/delete",               CrawlDelete,      Account),

    route("POST",   "/api/v1/chatbot/{uuid}/source-tag/create",  SourceTagCreate,  Account),
    route("GET",    "/api/v1/chatbot/{uuid}/source-tags",        SourceTagList,    Account),
    route("POST",   "/api/v1/source-tag/{uuid}/update",          SourceTagUpdate,  Account),
    route("DELETE", "/api/v1/source-tag/{uuid}/delete",          SourceTagDelete,  Account),

    route("POST",   "/api/v1/chatbot/{uuid}/search",             Search,           AccountInRead),

    route("POST",   "/api/v1/chatbot/{uuid}/session/create",     SessionCreate,    Account),
    route("GET",    "/api/v1/chatbot/{uuid}/sessions",           SessionList,      Account),
    route("GET",    "/api/v1/session/{uuid}",                    SessionGet,       Account),
    route("POST",   "/api/v1/session/{uuid}/delete",             SessionDelete,    Account),
    route("GET",    "/api/v1/session/{uuid}/messages",           SessionMessages,  Account),
    route("POST",   "/api/v1/session/{uuid}/message/stream",     MessageStream,    AccountInRead),
    route("POST",   "/api/v1/session/{uuid}/message/non-stream", MessageNonStream, AccountInRead),
    route("POST",   "/api/v1/message/{uuid}/delete",             MessageDelete,    Account),
    route("POST",   "/api/v1/messages/delete",                   MessageDeleteMany, Account),
    route("GET",    "/api/v1/agent/models",                      ModelList,        Account),

    route("POST",   "/api/v1/agent/{uuid}/tool-function/create", ToolFunctionCreate, Account),
    route("GET",    "/api/v1/agent/{uuid}/tool-functions",       ToolFunctionList,   Account),
    route("POST",   "/api/v1/tool-function/{uuid}/update",       ToolFunctionUpdate, Account),
    route("DELETE", "/api/v1/tool-function/{uuid}/delete",       ToolFunctionDelete, Account),

    route("POST",   "/api/v1/session/{uuid}/live-chat/start",    LiveChatStart,    Account),
    route("POST",   "/api/v1/session/{uuid}/live-chat/message",  LiveChatMessage,  Account),
    route("POST",   "/api/v1/session/{uuid}/live-chat/end",      LiveChatEnd,      Account),

    // Site visitors: a short-lived token instead of an API key (see `widget`).
    route("POST",   "/api/v1/widget/{uuid}/token",               WidgetToken,      Public),
];

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
        if route.method == method {
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
/// messages and answer stream of sessions the visitor created. Each of these also takes an
/// account key, with the route's own `Access`.
pub const VISITOR_ENDPOINTS: &[Endpoint] = &[SessionCreate, SessionMessages, MessageStream];

pub fn admits_visitors(endpoint: Endpoint) -> bool {
    VISITOR_ENDPOINTS.contains(&endpoint)
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

    /// A visitor's token opens a new session, its messages and the answer stream: no more.
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
                "/api/v1/session/{uuid}/message/stream"
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

    /// The OpenAPI document and the route table list exactly the same operations.
    #[test]
    fn openapi_document_matches_the_route_table() {
        use std::collections::BTreeSet;
        let doc: serde_json::Value =
            serde_json::from_str(crate::api::OPENAPI_DOCUMENT).expect("openapi.json parses");
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
            }
        }
    }
}
