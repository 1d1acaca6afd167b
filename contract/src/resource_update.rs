//! A change of a resource an upstream serves, as it travels to the sessions
//! that subscribed to it.

/// An upstream said a resource changed (`notifications/resources/updated`),
/// for whoever relays it to the clients that subscribed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUpdate {
    /// The upstream's id.
    pub server: String,
    /// The resource's URI, as the upstream names it.
    pub uri: String,
}
