//! Cross-module tests: construct-by-construct selection, parse errors, the filters file, properties.
