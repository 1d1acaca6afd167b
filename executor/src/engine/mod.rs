//! The JavaScript engine (being written): the only module that touches deno_core.
