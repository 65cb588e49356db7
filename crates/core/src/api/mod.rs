//! The API's contract with its clients: the route table and who may call each route, the one
//! error type and its JSON body, input validation, and the OpenAPI description.

pub mod error;
pub mod routes;
pub mod validate;

/// The service's OpenAPI 3.1 description. The Worker serves it from its static files
/// (`public/`): built in, it took 20 KB of the compressed module's 1 MiB. A route-table test
/// keeps it listing exactly the routes `routes::ROUTES` serves.
#[cfg(test)]
pub const OPENAPI_DOCUMENT: &str = include_str!("../../../../public/openapi.json");

/// Where the description is among the static files.
pub const OPENAPI_ASSET_PATH: &str = "/openapi.json";
