//! Static validation of scripts (being written).
