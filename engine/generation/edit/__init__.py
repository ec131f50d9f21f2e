"""Edit mode: the stages of :data:`engine.generation.edit.pipeline.EDIT_STAGES`, one module each."""
