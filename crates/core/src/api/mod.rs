//! The API's contract with its clients: the route table and who may call each route, the one
//! error type and its JSON body, input validation, and the OpenAPI description.

pub mod error;
pub mod routes;
pub mod validate;

/// The service's OpenAPI 3.1 description, built into the Worker. A route-table test keeps it
/// listing exactly the routes `routes::ROUTES` serves.
pub const OPENAPI_DOCUMENT: &str = include_str!("../../../../openapi/openapi.json");
