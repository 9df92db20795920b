//! Tokenizers rebuilt from GGUF metadata.
