//! Where the tests find the sentence model (scripts/install-model.sh puts it
//! there; scripts/test.sh runs that first).

use std::{path::PathBuf, sync::Arc};

use quiver_view::search::{SemanticModel, eval, semantic::default_model_dir};

/// The installed model's directory; `None` only when it is missing and
/// QUIVER_PARTIAL_TESTS=1 marks a local partial run (otherwise an error
/// that says how to install it).
pub fn model_dir() -> anyhow::Result<Option<PathBuf>> {
    let dir = default_model_dir().expect("HOME or QUIVER_SEARCH_MODEL_DIR is set");
    let present = eval::test_input_present(
        &dir.join("model.safetensors"),
        "run scripts/install-model.sh",
    )?;
    Ok(present.then_some(dir))
}

/// The installed model as a process loads it (shipped adapter on), if any.
pub fn model() -> anyhow::Result<Option<Arc<SemanticModel>>> {
    let Some(dir) = model_dir()? else {
        return Ok(None);
    };
    Ok(Some(Arc::new(SemanticModel::load(&dir, None)?)))
}
