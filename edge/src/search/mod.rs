//! Tool search (placeholder, being written).
