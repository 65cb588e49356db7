use super::new_uuid;
use crate::app::http::{json_response, success_response};
use crate::app::{invalid_key, Call, Caller};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::{canonical_uuid, Body, MAX_NAME_CHARS};
use edgechat_core::domain::api_key::{display_prefix, generate_key, hash_key, ApiKey, KeyPolicy};
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

fn no_account() -> ApiError {
    ApiError::not_found("account")
}

/// With the admin token: a key on a new account, or on `account_uuid`. With an account key:
/// another key on the caller's own account, with at most the caller's scopes. The body may
/// limit the new key: `scopes`, `expires_at`, `allowed_ips`, `rate_limit` (`KeyPolicy`).
pub async fn create(mut call: Call) -> ApiResult<Response> {
    let body = call.json_body().await?;
    let b = Body(&body);
    let name = b
        .opt_nonblank_str("name", MAX_NAME_CHARS)?
        .unwrap_or_else(|| "API key".to_string());
    let requested_account =
        match b.opt_str("account_uuid", 64)? {
            Some(raw) => Some(canonical_uuid(&raw).ok_or_else(|| {
                ApiError::invalid("account_uuid", "`account_uuid` must be a uuid.")
            })?),
            None => None,
        };
    let now = time::now();
    let default_rate = call.config.api_key_rate_limit;
    let granter = match &call.caller {
        Caller::Account { policy, .. } => Some((
            policy,
            (
                i64::from(default_rate.count),
                i64::from(default_rate.window_secs),
            ),
        )),
        _ => None,
    };
    let policy = KeyPolicy::from_body(&b, granter, &now)?;
    let (account_uuid, new_account) = match (&call.caller, requested_account) {
        (Caller::Admin, None) => (new_uuid(), true),
        (Caller::Admin, Some(account)) => {
            if !call.store.account_exists(&account).await? {
                return Err(no_account());
            }
            (account, false)
        }
        (Caller::Account { account_uuid, .. }, requested) => {
            if requested.is_some_and(|r| &r != account_uuid) {
                return Err(no_account());
            }
            (account_uuid.clone(), false)
        }
        (Caller::Anonymous | Caller::Visitor(_), _) => {
            return Err(ApiError::Unauthorized("An API key is required.".into()))
        }
    };
    let secret =
        generate_key().map_err(|e| ApiError::internal(format!("random source failed: {e}")))?;
    let key = ApiKey {
        uuid: new_uuid(),
        account_uuid,
        name,
        prefix: display_prefix(&secret),
        created_at: now,
        policy,
        last_used_at: None,
    };
    call.store
        .insert_key(&key, &hash_key(&secret), new_account)
        .await?;
    call.log.record(&key.uuid);
    json_response(&key.to_json_with_secret(&secret))
}

/// The caller's keys (the operator: every key, or one account's with `?account_uuid=`).
pub async fn list(call: Call) -> ApiResult<Response> {
    let filter = match &call.caller {
        Caller::Account { account_uuid, .. } => Some(account_uuid.clone()),
        _ => {
            let url = call.req.url()?;
            match url.query_pairs().find(|(k, _)| k == "account_uuid") {
                Some((_, v)) => Some(canonical_uuid(&v).ok_or_else(|| {
                    ApiError::invalid("account_uuid", "`account_uuid` must be a uuid.")
                })?),
                None => None,
            }
        }
    };
    let keys = call.store.list_keys(filter.as_deref()).await?;
    json_response(&Value::Array(keys.iter().map(ApiKey::to_json).collect()))
}

/// `GET /api-key/current`: the calling key's own record (its scopes, expiry, addresses, rate),
/// so a client can tell what it may do.
pub async fn current(call: Call) -> ApiResult<Response> {
    let Caller::Account { key_uuid, .. } = &call.caller else {
        return Err(ApiError::Unauthorized(
            "This endpoint needs an account API key.".into(),
        ));
    };
    let key = call
        .store
        .get_key(key_uuid)
        .await?
        // Deleted between the check and this read.
        .ok_or_else(invalid_key)?;
    json_response(&key.to_json())
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let key_uuid = call.uuid_param(0, "API key")?;
    let scope = match &call.caller {
        Caller::Account { account_uuid, .. } => Some(account_uuid.as_str()),
        _ => None,
    };
    if !call.store.delete_key(&key_uuid, scope).await? {
        return Err(ApiError::not_found("API key"));
    }
    success_response()
}
