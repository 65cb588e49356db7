//! The API's contract with its clients: the route table and who may call each route, the one
//! error type and its JSON body, input validation, and the OpenAPI description.

pub mod error;
pub mod routes;
pub mod validate;

/// Where the service's OpenAPI 3.1 description is among the static files (`public/`): built
/// into the module it took 20 KB of the compressed Worker's 1 MiB. A route-table test keeps it
/// listing exactly the routes `routes::ROUTES` serves.
pub const OPENAPI_ASSET_PATH: &str = "/openapi.json";
