//! Calls from the Worker to the outside (web-page sources, tool functions): only to URLs the
//! guard allows, following redirects by hand so every hop is checked, within a time limit and
//! a size cap.

use edgechat_core::knowledge::url_guard::{check_url, PrivateAccess};
use futures::future::{select, Either};
use futures::StreamExt;
use std::time::Duration;
use worker::{
    AbortController, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect,
};

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub timeout: Duration,
    pub max_bytes: usize,
    pub max_redirects: usize,
}

pub struct Outgoing<'a> {
    pub method: Method,
    pub url: &'a str,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

#[derive(Debug)]
pub struct Fetched {
    /// Where the content came from after redirects.
    pub url: String,
    pub status: u16,
    pub content_type: Option<String>,
    /// The validators a later conditional request sends back.
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub body: Vec<u8>,
    /// Requests sent, redirects included.
    pub requests: u32,
}

/// Why a call failed, in a sentence for a person, and whether trying again later may work (the
/// server could not be reached, took too long, or the connection broke) or not (the URL is
/// refused, redirects loop, the answer is too large).
#[derive(Debug)]
pub struct FetchError {
    pub reason: String,
    pub transient: bool,
    /// A redirect led where the caller's scope does not go (`fetch_scoped`).
    pub out_of_scope: bool,
    /// What the server answered, when it answered (a redirect that was not followed).
    pub status: Option<u16>,
}

fn lasting(reason: String) -> FetchError {
    FetchError {
        reason,
        transient: false,
        out_of_scope: false,
        status: None,
    }
}

fn passing(reason: String) -> FetchError {
    FetchError {
        reason,
        transient: true,
        out_of_scope: false,
        status: None,
    }
}

/// Aborts the call it controls when dropped: on a time limit, when the caller stops waiting
/// (an answer stopped while its tool or its model's next round is called), and when a
/// streamed answer is dropped (a reader that left), so no request is left open behind it.
/// Aborting a call that has ended does nothing.
pub struct AbortOnDrop(Option<AbortController>);

impl AbortOnDrop {
    pub fn new() -> Self {
        AbortOnDrop(Some(AbortController::default()))
    }

    /// The signal to send the call with.
    pub fn signal(&self) -> worker::AbortSignal {
        match &self.0 {
            Some(controller) => controller.signal(),
            None => AbortController::default().signal(),
        }
    }
}

impl Default for AbortOnDrop {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(controller) = self.0.take() {
            controller.abort();
        }
    }
}

/// Where a redirect may lead: `Err` with the reason when not there.
pub type Scope<'a> = &'a dyn Fn(&url::Url) -> Result<(), String>;

/// Sends `out`, following at most `limits.max_redirects` redirects (a 303, or a 301/302 after a
/// POST, becomes a GET without a body, as browsers do). The error is a sentence for a person.
pub async fn fetch(
    out: Outgoing<'_>,
    access: &PrivateAccess,
    limits: Limits,
) -> Result<Fetched, String> {
    fetch_classified(out, access, limits)
        .await
        .map_err(|e| e.reason)
}

/// As `fetch`, telling a failure worth retrying from one that is not.
pub async fn fetch_classified(
    out: Outgoing<'_>,
    access: &PrivateAccess,
    limits: Limits,
) -> Result<Fetched, FetchError> {
    fetch_scoped(out, access, limits, &|_| Ok(())).await
}

/// As `fetch_classified`, following a redirect only where `scope` allows (a crawl's site,
/// filters and robots rules): a hop outside is not sent.
pub async fn fetch_scoped(
    out: Outgoing<'_>,
    access: &PrivateAccess,
    limits: Limits,
    scope: Scope<'_>,
) -> Result<Fetched, FetchError> {
    let controller = AbortOnDrop::new();
    let signal = controller.signal();
    let work = async {
        let mut url = check_url(out.url, access).map_err(lasting)?;
        let origin = url.origin();
        let mut method = out.method.clone();
        let mut body = out.body.clone();
        for hop in 0..=limits.max_redirects {
            let headers = Headers::new();
            // The caller's headers are often credentials for the server it named (a tool's
            // API key, a password from its URL); a redirect to another origin gets only the
            // ones that describe the request, as browsers and curl drop `Authorization`.
            let foreign = url.origin() != origin;
            // A body's type goes only with a body (a POST turned GET by a redirect has none).
            for (name, value) in out.headers.iter().filter(|(name, _)| {
                if name.eq_ignore_ascii_case("content-type") {
                    body.is_some()
                } else {
                    !foreign
                        || name.eq_ignore_ascii_case("accept")
                        || name.eq_ignore_ascii_case("user-agent")
                }
            }) {
                headers.set(name, value).map_err(|_| {
                    lasting(format!("The header {name:?} is not a valid HTTP header."))
                })?;
            }
            let mut init = RequestInit::new();
            init.with_method(method.clone())
                .with_headers(headers)
                .with_redirect(RequestRedirect::Manual)
                .with_body(body.as_deref().map(wasm_bindgen::JsValue::from_str));
            let request = Request::new_with_init(url.as_str(), &init)
                .map_err(|e| lasting(format!("Could not build the request: {e}")))?;
            let mut response = Fetch::Request(request)
                .send_with_signal(&signal)
                .await
                .map_err(|e| {
                    // The runtime words a failed connection (no such host, refused) as its
                    // own "internal error; reference = ..."; it is the network's failure, not
                    // ours, and the reference says nothing to the owner reading the reason.
                    let detail = e.to_string();
                    let detail = if detail.contains("internal error") {
                        "the connection failed".to_string()
                    } else {
                        detail
                    };
                    passing(format!(
                        "Could not reach {}: {detail}",
                        url.host_str().unwrap_or("the server")
                    ))
                })?;
            let status = response.status_code();
            if (300..400).contains(&status) && status != 304 {
                let location = response
                    .headers()
                    .get("Location")
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        lasting(format!(
                            "The server answered {status} without a Location to follow."
                        ))
                    })?;
                let next = edgechat_core::idn::join(&url, &location).map_err(|_| {
                    lasting(format!(
                        "The server redirected to an invalid URL: {location:?}."
                    ))
                })?;
                if hop == limits.max_redirects {
                    let reason = match limits.max_redirects {
                        0 => format!(
                            "The server answered {status}, a redirect to {next}, which is not followed."
                        ),
                        n => format!("Gave up after {n} redirects (the last to {next})."),
                    };
                    return Err(FetchError {
                        status: Some(status),
                        ..lasting(reason)
                    });
                }
                url = check_url(next.as_str(), access).map_err(lasting)?;
                scope(&url).map_err(|reason| FetchError {
                    out_of_scope: true,
                    status: Some(status),
                    ..lasting(reason)
                })?;
                if status == 303 || ((status == 301 || status == 302) && method == Method::Post) {
                    method = Method::Get;
                    body = None;
                }
                continue;
            }
            let content_type = response.headers().get("Content-Type").ok().flatten();
            let etag = response.headers().get("ETag").ok().flatten();
            let last_modified = response.headers().get("Last-Modified").ok().flatten();
            let declared = response
                .headers()
                .get("Content-Length")
                .ok()
                .flatten()
                .and_then(|v| v.trim().parse::<usize>().ok());
            if declared.is_some_and(|n| n > limits.max_bytes) {
                return Err(lasting(too_big(limits.max_bytes)));
            }
            let mut bytes = Vec::new();
            if let Ok(mut stream) = response.stream() {
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(|e| {
                        passing(format!(
                            "The connection failed while reading the answer: {e}"
                        ))
                    })?;
                    if bytes.len() + chunk.len() > limits.max_bytes {
                        return Err(lasting(too_big(limits.max_bytes)));
                    }
                    bytes.extend_from_slice(&chunk);
                }
            }
            return Ok(Fetched {
                url: url.to_string(),
                status,
                content_type,
                etag,
                last_modified,
                body: bytes,
                requests: hop as u32 + 1,
            });
        }
        // Every hop returns or continues, and the last one never continues.
        Err(lasting("Gave up following redirects.".to_string()))
    };
    let timer = Delay::from(limits.timeout);
    futures::pin_mut!(work);
    match select(work, timer).await {
        Either::Left((result, _)) => result,
        Either::Right(_) => {
            drop(controller);
            Err(passing(format!(
                "The server did not answer within {} seconds.",
                limits.timeout.as_secs()
            )))
        }
    }
}

fn too_big(limit: usize) -> String {
    format!(
        "The answer is larger than the {} KiB this service reads.",
        limit / 1024
    )
}
